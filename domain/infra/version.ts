/**
 * Which release this process is: the version in deno.json, said in the start log line and by `GET /readyz`, so an
 * operator can tell old instances from new ones during a rolling upgrade (docs/production.md, "Upgrading").
 */
import project from "../../deno.json" with { type: "json" };

export const VERSION: string = project.version;
