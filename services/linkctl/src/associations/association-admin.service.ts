import type { AndroidAssociation, AppAssociation, IosAssociation } from '@linkservice/contracts';
import { linkHostFor, toAppAssociation } from '@linkservice/contracts';
import type { AppAssociationRow, Environment } from '@linkservice/db';
import type { AppAdminFailure, AppAdminService, AppAdminView } from '../apps/app-admin.service';
import { quoted } from '../quoted';
import type { Failure, Result } from '../result';
import { fail, ok } from '../result';
import type { AssociationAdminRepository } from './association-admin.repository';

// Apple: the Team ID is 10 characters of A-Z 0-9; a bundle ID is reverse-DNS of A-Z a-z 0-9 -
// and at most 155 characters. Android: an application id is Java-package style (two or more
// segments, each a letter then letters, digits or _); a signing certificate fingerprint is the
// SHA-256 digest as 32 colon-separated hex bytes, as keytool and the Play Console print it.
const TEAM_ID = /^[A-Z0-9]{10}$/;
const BUNDLE_ID = /^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/;
const BUNDLE_ID_MAX_LENGTH = 155;
const PACKAGE_NAME = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$/;
const PACKAGE_NAME_MAX_LENGTH = 255;
const SHA256_FINGERPRINT = /^[0-9A-F]{2}(:[0-9A-F]{2}){31}$/;
/** Apps are signed by a handful of certificates (upload, Play signing, debug...). */
export const MAX_FINGERPRINTS = 10;

const NOTHING_SET: AppAssociation = { ios: null, android: null };

export type AssociationsFailure =
  | AppAdminFailure
  | Failure<
      'invalid_team_id' | 'invalid_bundle_id' | 'invalid_package_name' | 'invalid_fingerprint'
    >;

/** What `app set-ios` takes: the pair Apple's file names, and the opt-in deferred page. */
export interface IosSettings extends IosAssociation {
  /**
   * Serve the "Get the app" page instead of the 302 to a link's iOS fallback
   * (app-interface.md). Undefined keeps the current setting; off for an environment without one.
   */
  deferredPage?: boolean;
}

/** What `app set-*` / `app unset-*` print: the app and the host's settings as they now stand. */
export interface AssociationView {
  app: AppAdminView;
  association: {
    environment: Environment;
    /** The host that serves the files: the live host or the `-test` host. */
    linkHost: string;
    ios: (IosAssociation & { appId: string; deferredPage: boolean }) | null;
    android: AndroidAssociation | null;
  };
}

export class AssociationAdminService {
  constructor(
    private readonly associations: AssociationAdminRepository,
    private readonly apps: AppAdminService,
    private readonly linkDomain: string,
  ) {}

  /** Team ID is upper-cased (Apple prints it so); the bundle ID is kept as given. */
  async setIos(
    appId: string,
    environment: Environment,
    input: IosSettings,
  ): Promise<Result<AssociationView, AssociationsFailure>> {
    const teamId = input.teamId.trim().toUpperCase();
    const bundleId = input.bundleId.trim();
    if (!TEAM_ID.test(teamId)) {
      return fail({
        code: 'invalid_team_id',
        message: `invalid team id ${quoted(input.teamId)}: must be 10 letters or digits`,
      });
    }
    if (!BUNDLE_ID.test(bundleId) || bundleId.length > BUNDLE_ID_MAX_LENGTH) {
      return fail({
        code: 'invalid_bundle_id',
        message: `invalid bundle id ${quoted(input.bundleId)}: must be reverse-DNS such as com.example.app (A-Z a-z 0-9 - and dots, at most ${BUNDLE_ID_MAX_LENGTH} characters)`,
      });
    }
    const app = await this.apps.getApp(appId);
    if (!app.ok) return app;
    const row = await this.associations.upsertIos(
      appId,
      environment,
      { teamId, bundleId },
      input.deferredPage,
    );
    return ok(this.toView(app.value, environment, toAppAssociation(row), row.ios_deferred_page));
  }

  /** Fingerprints are upper-cased and deduplicated, first occurrence kept. */
  async setAndroid(
    appId: string,
    environment: Environment,
    input: AndroidAssociation,
  ): Promise<Result<AssociationView, AssociationsFailure>> {
    const packageName = input.packageName.trim();
    if (!PACKAGE_NAME.test(packageName) || packageName.length > PACKAGE_NAME_MAX_LENGTH) {
      return fail({
        code: 'invalid_package_name',
        message: `invalid package name ${quoted(input.packageName)}: must be like com.example.app (two or more segments, each a letter then letters, digits or _)`,
      });
    }
    const fingerprints = [...new Set(input.sha256Fingerprints.map((f) => f.trim().toUpperCase()))];
    if (fingerprints.length === 0 || fingerprints.length > MAX_FINGERPRINTS) {
      return fail({
        code: 'invalid_fingerprint',
        message: `give 1-${MAX_FINGERPRINTS} signing certificate fingerprints`,
      });
    }
    const bad = fingerprints.find((f) => !SHA256_FINGERPRINT.test(f));
    if (bad !== undefined) {
      return fail({
        code: 'invalid_fingerprint',
        message: `invalid SHA-256 fingerprint ${quoted(bad)}: must be 32 colon-separated hex bytes (AB:CD:...)`,
      });
    }
    const app = await this.apps.getApp(appId);
    if (!app.ok) return app;
    const row = await this.associations.upsertAndroid(appId, environment, {
      packageName,
      sha256Fingerprints: fingerprints,
    });
    return ok(this.toView(app.value, environment, toAppAssociation(row), row.ios_deferred_page));
  }

  /** Idempotent: unsetting what is not set succeeds and shows the association as it stands. */
  unsetIos(
    appId: string,
    environment: Environment,
  ): Promise<Result<AssociationView, AssociationsFailure>> {
    return this.unset(appId, environment, () => this.associations.clearIos(appId, environment));
  }

  /** Idempotent, like unsetIos. */
  unsetAndroid(
    appId: string,
    environment: Environment,
  ): Promise<Result<AssociationView, AssociationsFailure>> {
    return this.unset(appId, environment, () => this.associations.clearAndroid(appId, environment));
  }

  private async unset(
    appId: string,
    environment: Environment,
    clearPlatform: () => Promise<AppAssociationRow | undefined>,
  ): Promise<Result<AssociationView, AssociationsFailure>> {
    const app = await this.apps.getApp(appId);
    if (!app.ok) return app;
    const row = await clearPlatform();
    const association = row ? toAppAssociation(row) : NOTHING_SET;
    // "Nothing set" has a single shape, no row, as for an app that never set anything. Until the
    // delete lands the link host already serves the same, as it reads only the platform columns.
    if (row && !association.ios && !association.android) {
      await this.associations.deleteIfEmpty(appId, environment);
    }
    return ok(this.toView(app.value, environment, association, row?.ios_deferred_page ?? false));
  }

  private toView(
    app: AppAdminView,
    environment: Environment,
    { ios, android }: AppAssociation,
    iosDeferredPage: boolean,
  ): AssociationView {
    return {
      app,
      association: {
        environment,
        linkHost: linkHostFor(app.subdomainKey, environment, this.linkDomain),
        ios: ios && {
          ...ios,
          // The app id Apple's association file names: <team id>.<bundle id>.
          appId: `${ios.teamId}.${ios.bundleId}`,
          deferredPage: iosDeferredPage,
        },
        android,
      },
    };
  }
}
