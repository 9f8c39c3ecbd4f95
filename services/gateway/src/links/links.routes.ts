import type { Response } from 'express';
import { authOf, combinedLoad } from '../auth/auth.middleware';
import type { GatewayDeps } from '../deps';
import { errors } from '../http/errors';
import { bodyOf } from '../http/json-body';
import type { ApiRoute } from '../http/routes';
import { pathParam } from '../http/routes';
import { sendJson } from '../http/send-json';
import { archiveLinkDoc, getLinkDoc, listLinksDoc, updateLinkDoc } from './links.openapi';
import type { LinkOwner } from './links.service';
import { linkOwnerOf } from './links.service';
import { parseListParams } from './list-params';

const NOT_FOUND = 'No such link.';

function ownerOf(res: Response): LinkOwner {
  return linkOwnerOf(authOf(res));
}

/** Reading, changing, archiving and listing links; creation lives in creation/creation.routes.ts. */
export function linksRoutes(deps: GatewayDeps): ApiRoute[] {
  const { links } = deps;
  // The hottest API read: the key check and the link read go out as one statement.
  const linkById = combinedLoad((keyHash, req) =>
    links.getForKey(keyHash, pathParam(req, 'linkId')),
  );
  return [
    {
      method: 'GET',
      path: '/links',
      openapi: listLinksDoc,
      handler: async (req, res) => {
        const params = parseListParams(req.query);
        sendJson(res, await links.list(ownerOf(res), params));
      },
    },
    {
      method: 'GET',
      path: '/links/:linkId',
      openapi: getLinkDoc,
      authenticatedLoad: linkById.authenticate,
      handler: (_req, res) => {
        const link = linkById.loadedOf(res);
        if (!link) throw errors.notFound(NOT_FOUND);
        sendJson(res, { link });
      },
    },
    {
      method: 'PATCH',
      path: '/links/:linkId',
      openapi: updateLinkDoc,
      handler: async (req, res) => {
        const outcome = await links.update(ownerOf(res), pathParam(req, 'linkId'), bodyOf(req));
        switch (outcome.kind) {
          case 'updated':
            sendJson(res, { link: outcome.link });
            return;
          case 'not_found':
            throw errors.notFound(NOT_FOUND);
          case 'archived':
            throw errors.conflict('The link is archived, and an archived link cannot be changed.');
          case 'invalid':
            throw errors.invalidRequest(outcome.fieldErrors);
        }
      },
    },
    {
      method: 'DELETE',
      path: '/links/:linkId',
      openapi: archiveLinkDoc,
      handler: async (req, res) => {
        const outcome = await links.archive(ownerOf(res), pathParam(req, 'linkId'));
        switch (outcome.kind) {
          case 'archived':
            sendJson(res, { link: outcome.link, note: outcome.note });
            return;
          case 'not_found':
            throw errors.notFound(NOT_FOUND);
          case 'already_archived':
            throw errors.conflict('The link is already archived.');
        }
      },
    },
  ];
}
