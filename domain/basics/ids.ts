/** Ids: the UUIDv7 a new row gets, and the pattern an id a client sends must match; shared by nearly every module. */
import { v7 } from "uuid";

/** Any RFC 4122 textual UUID; versions are not checked because companies bring their own. */
// no `i` flag: the pattern is also published in the OpenAPI document, where flags do not exist
export const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** Time-ordered ids, so cursor pagination by id follows creation order. */
export const newId = (): string => v7();
