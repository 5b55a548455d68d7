/**
 * When an endpoint's filter is checked against its event types (docs/webhooks.md, "Filters", "Checked against the
 * event types"): on create, and on an update that changes the filter or the subscribed types, never on evaluation,
 * so a filter stored before the check runs as it always did. A file of its own because the rule of when (the
 * stored row against the request) is the endpoints', while what the check is belongs to the filters
 * (outbox/filter_types.ts).
 */

import type { SqlOrTransaction } from "../../infra/db.ts";
import { ErrorBag, notFound } from "../../basics/errors.ts";
import { filterTypeProblem } from "../outbox/filter_types.ts";
import type { EndpointRow } from "./endpoint_row.ts";

function refuse(message: string): never {
  const errors = new ErrorBag();
  errors.add("filter", message);
  errors.throwIfAny(422);
  throw new Error("unreachable");
}

/** A new endpoint's filter against the types it subscribes to (`["*"]` when it names none). */
export function checkNewEndpointFilter(input: { filter?: string | null; enabled_events?: string[] | null }) {
  if (typeof input.filter !== "string") return;
  const problem = filterTypeProblem(input.filter, input.enabled_events ?? ["*"]);
  if (problem) refuse(problem);
}

const sameTypes = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().join("\n") === [...b].sort().join("\n");

/**
 * An update's filter against the types the endpoint will subscribe to, read under the row's lock, when either
 * changes. A change of types alone is refused only when it is what breaks the filter: one stored before this check
 * that already fails it is left as it is (its errors show in the stats), not made a reason to refuse the change.
 */
export async function checkUpdatedEndpointFilter(
  tx: SqlOrTransaction,
  companyId: string,
  id: string,
  input: { filter?: string | null; enabled_events?: string[] | null },
) {
  if (input.filter === undefined && input.enabled_events == null) return;
  if (input.filter === null) return;
  const [current] = await tx<Pick<EndpointRow, "filter" | "enabled_events">[]>`
    select filter, enabled_events from webhook_endpoints
    where company_id = ${companyId} and id = ${id} for no key update`;
  if (!current) throw notFound();
  const filter = input.filter ?? current.filter;
  const types = input.enabled_events ?? current.enabled_events;
  if (filter === null) return;
  const filterChanged = filter !== current.filter;
  if (!filterChanged && sameTypes(types, current.enabled_events)) return;
  const problem = filterTypeProblem(filter, types);
  if (problem === null) return;
  if (filterChanged) refuse(problem);
  if (filterTypeProblem(filter, current.enabled_events) !== null) return;
  refuse(`with enabled_events ${JSON.stringify(types)}, the endpoint's filter no longer type-checks: ${problem}`);
}
