/**
 * Payload versions (docs/webhooks.md, "Payload versions"): the shapes a snapshot body has had, oldest first, each with
 * what changed, how its body becomes the one before it (`downgrade`) and how its JSON Schema follows from the one
 * before it (`schemaFrom`). A body is built in the latest shape and stepped down to the endpoint's version, Stripe's
 * way, so a new field never reaches an endpoint pinned before it. A file of its own: the catalogue serves the
 * versions, the endpoint operations check them and the body renderer applies them.
 */

import { CATALOGUE, type CatalogueEntry, type JsonSchema } from "./catalogue.ts";

/** A snapshot body `{id, type, timestamp?, data, secret?}` as it is being shaped (key order is the sent order). */
export type SnapshotBody = Record<string, unknown>;

type VersionStep = {
  version: string;
  /** What this version changed against the one before it, for the catalogue and the docs. */
  changes: string;
  /** Its body as the version before it had it; absent for the first. */
  downgrade?: (body: SnapshotBody) => SnapshotBody;
  /** Its snapshot schema from the version before it; absent for the first. */
  schemaFrom?: (schema: JsonSchema) => JsonSchema;
};

const INSTANT_PATTERN = "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$";

/** Every version, oldest first. A new version is appended; none is ever changed or removed. */
export const PAYLOAD_VERSIONS = [
  {
    version: "2026-11-23",
    changes: "The first version: the bodies of the original interface, `{id, type, data}`. An endpoint that names no " +
      "version gets it, so every endpoint made before versions existed receives what it always received.",
  },
  {
    version: "2026-11-27",
    changes: "A snapshot body carries `timestamp`, between `type` and `data`: when the event happened (ISO 8601, " +
      "UTC, milliseconds), the same at every attempt and in a replay, where `webhook-timestamp` is the attempt's " +
      "instant (Standard Webhooks' payload field). Thin and wrapped bodies do not change.",
    // the envelope's keys named, not `{timestamp, ...before}`: a rest copy costs each unpinned attempt about 1.5 µs
    downgrade: (b) =>
      b.secret === undefined
        ? { id: b.id, type: b.type, data: b.data }
        : { id: b.id, type: b.type, data: b.data, secret: b.secret },
    schemaFrom: (schema) => {
      const { id, type, ...rest } = schema.properties as Record<string, JsonSchema>;
      return {
        ...schema,
        properties: {
          id,
          type,
          timestamp: { type: "string", pattern: INSTANT_PATTERN, description: "When the event happened" },
          ...rest,
        },
        required: ["id", "type", "timestamp", "data"],
      };
    },
  },
] as const satisfies readonly VersionStep[];

export type PayloadVersion = (typeof PAYLOAD_VERSIONS)[number]["version"];

export const VERSION_NAMES = PAYLOAD_VERSIONS.map((v) => v.version) as [PayloadVersion, ...PayloadVersion[]];
/** What an endpoint that names no version gets (a null column). */
export const FIRST_PAYLOAD_VERSION: PayloadVersion = VERSION_NAMES[0];
export const LATEST_PAYLOAD_VERSION: PayloadVersion = VERSION_NAMES[VERSION_NAMES.length - 1];

export function isPayloadVersion(value: unknown): value is PayloadVersion {
  return typeof value === "string" && (VERSION_NAMES as string[]).includes(value);
}

/** The version an endpoint's column stands for: null (not pinned) is the first. */
export function payloadVersionOf(stored: string | null | undefined): PayloadVersion {
  return stored != null && isPayloadVersion(stored) ? stored : FIRST_PAYLOAD_VERSION;
}

/** A latest-shape snapshot body stepped down to `version`, each version's downgrade in turn. */
export function toVersion(body: SnapshotBody, version: PayloadVersion): SnapshotBody {
  let out = body;
  for (let i = PAYLOAD_VERSIONS.length - 1; PAYLOAD_VERSIONS[i].version !== version; i--) {
    out = (PAYLOAD_VERSIONS[i] as VersionStep).downgrade!(out);
  }
  return out;
}

/** The instant the catalogue's example events happened. */
const EXAMPLE_INSTANT = "2026-11-21T07:00:00.123Z";

/** One event type as one version has it: the schema of its snapshot body and an example body that validates. */
export type VersionedType = { type: CatalogueEntry["type"]; schema: JsonSchema; example: SnapshotBody };

/** Every version with what changed and every event type's schema and example in it, oldest first. */
export const VERSIONED_CATALOGUE: readonly {
  version: PayloadVersion;
  changes: string;
  latest: boolean;
  event_types: VersionedType[];
}[] = (() => {
  // the first version's schemas are the catalogue's own; each later one follows from the one before it
  let schemas = CATALOGUE.map((e) => e.schema);
  return PAYLOAD_VERSIONS.map((step: VersionStep) => {
    if (step.schemaFrom) schemas = schemas.map(step.schemaFrom);
    const version = step.version as PayloadVersion;
    return {
      version,
      changes: step.changes,
      latest: version === LATEST_PAYLOAD_VERSION,
      event_types: CATALOGUE.map((e, i) => ({
        type: e.type,
        // the first version's schema is the catalogue's, word for word: what an endpoint that names none gets
        schema: !step.schemaFrom ? schemas[i] : {
          ...schemas[i],
          description:
            `${e.description} The snapshot body in payload version ${version}; event_mapping renames \`type\`.`,
        },
        example: toVersion(
          { id: e.example.id, type: e.type, timestamp: EXAMPLE_INSTANT, data: e.example.data },
          version,
        ),
      })),
    };
  });
})();
