import { v7 } from "uuid";

/** Any RFC 4122 textual UUID; versions are not checked because companies bring their own. */
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Time-ordered ids, so cursor pagination by id follows creation order. */
export const newId = (): string => v7();
