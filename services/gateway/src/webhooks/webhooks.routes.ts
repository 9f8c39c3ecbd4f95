import type { Request, Response } from 'express';
import { authOf } from '../auth/auth.middleware';
import type { GatewayDeps } from '../deps';
import { errors } from '../http/errors';
import { bodyOf } from '../http/json-body';
import type { ApiRoute } from '../http/routes';
import { pathParam } from '../http/routes';
import { sendJson } from '../http/send-json';
import {
  actionBodyProblems,
  MAX_WEBHOOKS_PER_ENVIRONMENT,
  parseDeliveriesQuery,
} from './webhook-params';
import {
  createWebhookDoc,
  deleteWebhookDoc,
  getWebhookDoc,
  listWebhookDeliveriesDoc,
  listWebhooksDoc,
  retryWebhookDeliveryDoc,
  rotateWebhookSecretDoc,
  updateWebhookDoc,
} from './webhooks.openapi';
import type { WebhookScope } from './webhooks.repository';
import { scopeOf } from './webhooks.service';

const NOT_FOUND = 'No such webhook.';
const NO_DELIVERY = 'No such delivery.';

function scope(res: Response): WebhookScope {
  return scopeOf(authOf(res));
}

/**
 * The actions take no input: a body, when sent, must be `{}`. Checked before anything is looked
 * up or changed, so a refused body changes nothing (and says nothing about the ids).
 */
function expectNoFields(req: Request): void {
  const problems = actionBodyProblems(req.body as Record<string, unknown> | undefined);
  if (Object.keys(problems).length > 0) {
    throw errors.invalidRequest(problems, 'This action takes no fields.');
  }
}

/** Webhook endpoints of the key's app and environment, and their deliveries (secret keys). */
export function webhooksRoutes(deps: GatewayDeps): ApiRoute[] {
  const { webhooks } = deps;
  return [
    {
      method: 'POST',
      path: '/webhooks',
      openapi: createWebhookDoc,
      handler: async (req, res) => {
        const outcome = await webhooks.create(scope(res), bodyOf(req));
        switch (outcome.kind) {
          case 'created':
            sendJson(res, { webhook: outcome.webhook, secret: outcome.secret }, { status: 201 });
            return;
          case 'invalid':
            throw errors.invalidRequest(outcome.fieldErrors);
          case 'limit_reached':
            throw errors.conflict(
              `An app can have at most ${MAX_WEBHOOKS_PER_ENVIRONMENT} webhooks per environment; delete one first.`,
            );
        }
      },
    },
    {
      method: 'GET',
      path: '/webhooks',
      openapi: listWebhooksDoc,
      handler: async (_req, res) => {
        sendJson(res, { webhooks: await webhooks.list(scope(res)) });
      },
    },
    {
      method: 'GET',
      path: '/webhooks/:webhookId',
      openapi: getWebhookDoc,
      handler: async (req, res) => {
        const webhook = await webhooks.get(scope(res), pathParam(req, 'webhookId'));
        if (!webhook) throw errors.notFound(NOT_FOUND);
        sendJson(res, { webhook });
      },
    },
    {
      method: 'PATCH',
      path: '/webhooks/:webhookId',
      openapi: updateWebhookDoc,
      handler: async (req, res) => {
        const outcome = await webhooks.update(scope(res), pathParam(req, 'webhookId'), bodyOf(req));
        switch (outcome.kind) {
          case 'updated':
            sendJson(res, { webhook: outcome.webhook });
            return;
          case 'not_found':
            throw errors.notFound(NOT_FOUND);
          case 'invalid':
            throw errors.invalidRequest(outcome.fieldErrors);
        }
      },
    },
    {
      method: 'DELETE',
      path: '/webhooks/:webhookId',
      openapi: deleteWebhookDoc,
      handler: async (req, res) => {
        if (!(await webhooks.delete(scope(res), pathParam(req, 'webhookId')))) {
          throw errors.notFound(NOT_FOUND);
        }
        res.status(204).end();
      },
    },
    {
      method: 'POST',
      path: '/webhooks/:webhookId/rotate-secret',
      openapi: rotateWebhookSecretDoc,
      bodyOptional: true,
      handler: async (req, res) => {
        expectNoFields(req);
        const rotated = await webhooks.rotateSecret(scope(res), pathParam(req, 'webhookId'));
        if (!rotated) throw errors.notFound(NOT_FOUND);
        sendJson(res, rotated);
      },
    },
    {
      method: 'GET',
      path: '/webhooks/:webhookId/deliveries',
      openapi: listWebhookDeliveriesDoc,
      handler: async (req, res) => {
        const parsed = parseDeliveriesQuery(req.query);
        if (!parsed.ok) throw errors.invalidRequest(parsed.fields, 'Some parameters are invalid.');
        const page = await webhooks.deliveries(
          scope(res),
          pathParam(req, 'webhookId'),
          parsed.query,
        );
        if (!page) throw errors.notFound(NOT_FOUND);
        sendJson(res, page);
      },
    },
    {
      method: 'POST',
      path: '/webhooks/:webhookId/deliveries/:deliveryId/retry',
      openapi: retryWebhookDeliveryDoc,
      bodyOptional: true,
      handler: async (req, res) => {
        expectNoFields(req);
        const outcome = await webhooks.retryDelivery(
          scope(res),
          pathParam(req, 'webhookId'),
          pathParam(req, 'deliveryId'),
        );
        switch (outcome.kind) {
          case 'retried':
            sendJson(res, { delivery: outcome.delivery }, { status: 202 });
            return;
          case 'no_webhook':
            throw errors.notFound(NOT_FOUND);
          case 'no_delivery':
            throw errors.notFound(NO_DELIVERY);
          case 'disabled':
            throw errors.conflict('The webhook is disabled; enable the webhook first.');
        }
      },
    },
  ];
}
