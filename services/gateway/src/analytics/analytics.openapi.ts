import { z } from 'zod';
import type { ZodOpenApiOperationObject } from 'zod-openapi';
import {
  ANALYTICS_DIMENSION_NAMES,
  ANALYTICS_INTERVALS,
  BROWSER_FAMILIES,
  CLICK_SOURCES,
  DEFAULT_ANALYTICS_LIMIT,
  MAX_ANALYTICS_LIMIT,
  MAX_ANALYTICS_RANGE_DAYS,
  MAX_HOURLY_RANGE_DAYS,
  OS_FAMILIES,
  PLATFORMS,
} from '@linkservice/contracts';
import { errorAnswer, jsonAnswer } from '../openapi/responses';
import { DEFAULT_RANGE_DAYS } from './analytics-params';

const linkIdParam = z.object({
  linkId: z.string().meta({
    description:
      "The link id. A link of another app, or of the key's other environment, is 404 like an unknown id.",
    example: 'lnk_01JQ3Z6Y8N4T7K2M5P9R0S1V3W',
  }),
});

const instant = (description: string) =>
  z
    .string()
    .optional()
    .meta({
      description: `${description} An ISO 8601 date-time with its offset, or a date (YYYY-MM-DD: midnight UTC).`,
      example: '2026-11-01T00:00:00Z',
    });

const filter = (description: string, values?: readonly string[]) =>
  (values ? z.enum(values as [string, ...string[]]) : z.string()).optional().meta({ description });

const analyticsQueryShape = {
  from: instant(`Start of the range (default: ${DEFAULT_RANGE_DAYS} days before \`to\`).`),
  to: instant(
    `End of the range, exclusive (default: now); at most ${MAX_ANALYTICS_RANGE_DAYS} days after \`from\`. A bucket counts when its start lies in [from, to).`,
  ),
  interval: z
    .enum(ANALYTICS_INTERVALS)
    .optional()
    .meta({
      description: `Buckets of the series: UTC hours (ranges of at most ${MAX_HOURLY_RANGE_DAYS} days; hourly detail is kept ANALYTICS_HOURLY_RETENTION_DAYS), UTC days (default) or calendar months (a partial month counts the range's days in it).`,
    }),
  groupBy: z
    .enum(ANALYTICS_DIMENSION_NAMES as [string, ...string[]])
    .optional()
    .meta({ description: 'The dimension of the breakdown; without it, no breakdown.' }),
  limit: z
    .int()
    .min(1)
    .max(MAX_ANALYTICS_LIMIT)
    .optional()
    .meta({
      description: `How many breakdown values (and top links) are listed, the most clicked first (default ${DEFAULT_ANALYTICS_LIMIT}); the rest are summed in \`rest\`.`,
    }),
  country: filter('Only clicks from this country: ISO 3166-1 alpha-2, or `unknown`.'),
  platform: filter('Only clicks from this platform.', PLATFORMS),
  os: filter('Only clicks from this operating system family.', OS_FAMILIES),
  browser: filter('Only clicks from this browser family.', BROWSER_FAMILIES),
  referrer: filter('Only clicks referred by this host (or `direct`, or `other`).'),
  utmSource: filter(
    'Only clicks whose tapped URL had this utm_source (compared normalised: trimmed, lower case), or `none`.',
  ),
  utmMedium: filter('Only clicks with this utm_medium, or `none`.'),
  utmCampaign: filter('Only clicks with this utm_campaign, or `none`.'),
  source: filter(
    "Only taps of the link URL (`link`) or only scans of the link's QR code (`qr`).",
    CLICK_SOURCES,
  ),
};

const counts = {
  clicks: z.int().min(0).meta({ description: 'Clicks by people.' }),
  botClicks: z
    .int()
    .min(0)
    .meta({ description: 'Clicks by crawlers and scripts that were redirected.' }),
};

const analyticsSchema = z
  .strictObject({
    linkId: z.string().optional().meta({ description: 'The link (its analytics only).' }),
    from: z.string().meta({ description: 'The range asked for, as an instant.' }),
    to: z.string(),
    interval: z.enum(ANALYTICS_INTERVALS),
    filters: z
      .record(z.string(), z.string())
      .meta({ description: 'The dimension filters applied, by name, as compared (normalised).' }),
    tag: z.string().optional().meta({ description: 'The tag filter, when given.' }),
    totals: z.strictObject({
      ...counts,
      uniqueVisitors: z.int().min(0).nullable().meta({
        description:
          "Unique visitors are counted per link and UTC day: over several days (or an app's links) this adds the daily figures (`uniqueVisitorsSummed`). Null with a dimension filter or an hourly interval.",
      }),
      uniqueVisitorsSummed: z.boolean().meta({
        description:
          'True when uniqueVisitors adds daily figures of several days or links: a person counts once per link and day.',
      }),
    }),
    series: z.array(
      z.strictObject({
        start: z.string().meta({ description: "The bucket's start (UTC)." }),
        ...counts,
        uniqueVisitors: z.int().min(0).nullable().meta({
          description:
            "A day's unique visitors; a month adds its days'; null by the hour or with a dimension filter.",
        }),
      }),
    ),
    breakdown: z
      .strictObject({
        dimension: z.enum(ANALYTICS_DIMENSION_NAMES as [string, ...string[]]),
        values: z.array(z.strictObject({ value: z.string(), ...counts })),
        rest: z.strictObject({ values: z.int().min(0), ...counts }).meta({
          description: 'The values past `limit`, summed: values and rest add up to the totals.',
        }),
      })
      .nullable(),
    topLinks: z
      .array(
        z.strictObject({
          linkId: z.string(),
          alias: z.string(),
          url: z.string(),
          title: z.string().nullable(),
          ...counts,
        }),
      )
      .optional()
      .meta({ description: "The app's most clicked links in the range (its analytics only)." }),
  })
  .meta({ id: 'Analytics' });

const analyticsAnswerSchema = z
  .strictObject({ analytics: analyticsSchema })
  .meta({ id: 'AnalyticsAnswer', description: 'Click analytics.' });

const invalid = errorAnswer(
  'invalid_request',
  'a parameter is invalid or unknown; `fields` names each.',
  'Some fields are invalid.',
  { fields: 'with' },
);

export const getLinkAnalyticsDoc: ZodOpenApiOperationObject = {
  operationId: 'getLinkAnalytics',
  summary: "A link's click analytics",
  description:
    'Totals, a series and a breakdown of the clicks of one link (the clicks its clickCount counts: clicks + botClicks), filtered by dimension.',
  tags: ['Analytics'],
  requestParams: { path: linkIdParam, query: z.object(analyticsQueryShape) },
  responses: {
    '200': jsonAnswer("The link's analytics.", analyticsAnswerSchema),
    '404': errorAnswer(
      'not_found',
      'no such link in the app and environment of the key.',
      'No such link.',
    ),
    '422': invalid,
  },
};

export const getAnalyticsDoc: ZodOpenApiOperationObject = {
  operationId: 'getAnalytics',
  summary: "The app's click analytics",
  description:
    "Totals, a series, a breakdown and the top links of every link of the app in the key's environment, filtered by dimension and by tag.",
  tags: ['Analytics'],
  requestParams: {
    query: z.object({
      ...analyticsQueryShape,
      tag: z.string().optional().meta({ description: 'Only links carrying this tag.' }),
    }),
  },
  responses: {
    '200': jsonAnswer("The app's analytics.", analyticsAnswerSchema),
    '422': invalid,
  },
};
