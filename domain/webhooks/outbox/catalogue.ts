/**
 * The event catalogue: per event type what it means, the JSON Schema (2020-12) of the body an endpoint with the
 * default settings receives, and an example body that validates. Written once and used three ways: `GET
 * /api/v2/notifications/event_types`, the OpenAPI document's `webhooks`, and the test event an integrator sends to
 * one endpoint. The data keys are those the emitters write (docs/webhooks.md, Bodies); a test validates every body
 * the suite's receivers get against these schemas.
 */

import { EVENT_TYPES, type EventType } from "./events.ts";

/** A JSON Schema, as plain JSON. */
export type JsonSchema = Record<string, unknown>;

export type CatalogueEntry = {
  type: EventType;
  description: string;
  /** The snapshot body `{id, type, data}` (plus `secret` with inject_secret_in_body). */
  schema: JsonSchema;
  /** A body of this type that validates against `schema`. */
  example: { id: string; type: EventType; data: Record<string, unknown> };
};

const UUID_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";
const uuid: JsonSchema = { type: "string", pattern: UUID_PATTERN };
const uuids: JsonSchema = { type: "array", items: uuid, minItems: 1 };
const text: JsonSchema = { type: "string" };
const nullableText: JsonSchema = { type: ["string", "null"] };

/** An object with exactly these keys; those in `optional` may be absent. */
function object(properties: Record<string, JsonSchema>, optional: string[] = []): JsonSchema {
  return {
    type: "object",
    properties,
    required: Object.keys(properties).filter((k) => !optional.includes(k)),
    additionalProperties: false,
  };
}

const ids = {
  delivery: "0195f3a0-7c1e-7a41-9d2b-5c8e1f0a3b01",
  transaction: "0195f3a0-7c1e-7a41-9d2b-5c8e1f0a3b02",
  transaction2: "0195f3a0-7c1e-7a41-9d2b-5c8e1f0a3b03",
  exchange: "0195f3a0-7c1e-7a41-9d2b-5c8e1f0a3b04",
  wire: "0195f3a0-7c1e-7a41-9d2b-5c8e1f0a3b05",
  subject: "0195f3a0-7c1e-7a41-9d2b-5c8e1f0a3b06",
  bankAccount: "0195f3a0-7c1e-7a41-9d2b-5c8e1f0a3b07",
  bankTransaction: "0195f3a0-7c1e-7a41-9d2b-5c8e1f0a3b08",
  subscription: "0195f3a0-7c1e-7a41-9d2b-5c8e1f0a3b09",
  invoice: "0195f3a0-7c1e-7a41-9d2b-5c8e1f0a3b0a",
  dedicatedAccount: "0195f3a0-7c1e-7a41-9d2b-5c8e1f0a3b0b",
  endpoint: "0195f3a0-7c1e-7a41-9d2b-5c8e1f0a3b0c",
  event: "0195f3a0-7c1e-7a41-9d2b-5c8e1f0a3b0d",
  failedDelivery: "0195f3a0-7c1e-7a41-9d2b-5c8e1f0a3b0e",
};

const transactionData = object({ transaction_id: uuid });
/** An instant as webhooks write it (`isoUtc`). */
const instant: JsonSchema = { type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$" };
/** The endpoint an operational event is about (never the endpoint that receives it). */
const aboutEndpoint = { endpoint_id: uuid, url: text };
const subscription = (status: string, extra: Record<string, JsonSchema> = {}) =>
  object({ subscription: object({ id: uuid, status: { const: status }, subject_id: uuid, ...extra }) });

/** Per type: description, the schema of `data`, an example `data`. */
const DATA: Record<EventType, { description: string; data: JsonSchema; example: Record<string, unknown> }> = {
  identified: {
    description: "A pay-in or pay-out was identified as the subject's (also a PIX charge paid by the subject).",
    data: transactionData,
    example: { transaction_id: ids.transaction },
  },
  exchange_created: {
    description: "A pay-in joined a currency exchange; lists every transaction the exchange carries so far, so it " +
      "is sent again, with the same exchange_id, each time one joins.",
    data: object({ exchange_id: uuid, transaction_ids: uuids }),
    example: { exchange_id: ids.exchange, transaction_ids: [ids.transaction, ids.transaction2] },
  },
  wire_created: {
    description: "A pay-out joined the day's wire; lists every transaction the wire carries so far, so it is sent " +
      "again, with the same wire_id, each time one joins.",
    data: object({ wire_id: uuid, transaction_ids: uuids }),
    example: { wire_id: ids.wire, transaction_ids: [ids.transaction] },
  },
  payment_approved: {
    description: "A card payment was approved.",
    data: transactionData,
    example: { transaction_id: ids.transaction },
  },
  payment_failed: {
    description: "A card payment failed.",
    data: transactionData,
    example: { transaction_id: ids.transaction },
  },
  wire_waiting_correction: {
    description: "The receiving bank refused the destination account: correct the bank account to send the wire.",
    data: object({
      error_code: text,
      error_description: text,
      bank_account_owner_id: uuid,
      bank_account_id: uuid,
      transaction_ids: uuids,
      wire_id: uuid,
    }),
    example: {
      error_code: "AC03",
      error_description: "Creditor account number invalid or missing",
      bank_account_owner_id: ids.subject,
      bank_account_id: ids.bankAccount,
      transaction_ids: [ids.transaction],
      wire_id: ids.wire,
    },
  },
  payment_refunded: {
    description: "A PIX charge that refuses third parties was paid by someone else, and the money was returned.",
    data: transactionData,
    example: { transaction_id: ids.transaction },
  },
  payment_expired: {
    description: "A PIX charge expired unpaid.",
    data: transactionData,
    example: { transaction_id: ids.transaction },
  },
  non_identified_bank_transaction: {
    description: "Money arrived from a payer who is not a registered subject; it is identified once the payer is " +
      "registered. `spei_concepto_de_pago` only for MXN transfers that carried one.",
    data: object({
      bank_transaction: object({
        id: uuid,
        value: { type: "string", pattern: "^\\d+(\\.\\d+)?$", description: "A decimal, as text" },
        currency: { type: "string", pattern: "^[A-Z]{3}$" },
        movement_date: { type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}$" },
        bank_account_id: uuid,
        paid_at: { type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$" },
        spei_concepto_de_pago: text,
        subject: object({
          document_number: text,
          document_type: text,
          name: text,
          bank_account: object({
            bank: nullableText,
            branch_number: nullableText,
            account_number: nullableText,
            account_type: nullableText,
          }),
        }),
      }, ["spei_concepto_de_pago"]),
    }),
    example: {
      bank_transaction: {
        id: ids.bankTransaction,
        value: "750.50",
        currency: "MXN",
        movement_date: "2026-11-21",
        bank_account_id: ids.dedicatedAccount,
        paid_at: "2026-11-21T07:00:00.123Z",
        spei_concepto_de_pago: "Factura 17",
        subject: {
          document_number: "HEGG560427MVZRRL04",
          document_type: "curp",
          name: "Pagador Desconocido",
          bank_account: {
            bank: "BBVA MEXICO",
            branch_number: null,
            account_number: "012180001234567891",
            account_type: null,
          },
        },
      },
    },
  },
  subject_approved: {
    description: "The subject was approved.",
    data: object({ subject_id: uuid }),
    example: { subject_id: ids.subject },
  },
  subject_reproved: {
    description: "The subject was reproved; `reason` only when one was given.",
    data: object({ subject_id: uuid, items: { type: "array", items: text }, reason: text }, ["reason"]),
    example: { subject_id: ids.subject, items: ["proof_of_address_rejected"], reason: "address proof is illegible" },
  },
  document_required: {
    description: "The subject must send these documents.",
    data: object({ subject_id: uuid, required_documents: { type: "array", items: text, minItems: 1 } }),
    example: { subject_id: ids.subject, required_documents: ["proof_of_address"] },
  },
  subscription_qr_code_generated: {
    description: "A PIX subscription was created: its QR code is ready for the payer.",
    data: subscription("pending", { qr_code: text }),
    example: {
      subscription: {
        id: ids.subscription,
        status: "pending",
        subject_id: ids.subject,
        qr_code: "00020101021226...6304ABCD",
      },
    },
  },
  subscription_activated: {
    description: "The first invoice of a subscription was paid.",
    data: subscription("active"),
    example: { subscription: { id: ids.subscription, status: "active", subject_id: ids.subject } },
  },
  subscription_canceled: {
    description: "A subscription was cancelled, by the merchant or by the payer.",
    data: subscription("canceled", { canceled_by_payer: { type: "boolean" }, canceled_reason: text }),
    example: {
      subscription: {
        canceled_by_payer: true,
        canceled_reason: "no longer",
        id: ids.subscription,
        status: "canceled",
        subject_id: ids.subject,
      },
    },
  },
  subscription_completed: {
    description: "The last invoice of a subscription was paid.",
    data: subscription("completed"),
    example: { subscription: { id: ids.subscription, status: "completed", subject_id: ids.subject } },
  },
  invoice_paid: {
    description: "An invoice of a subscription was paid.",
    data: object({ invoice: object({ id: uuid, status: { const: "paid" }, subject_id: uuid, subscription_id: uuid }) }),
    example: {
      invoice: { id: ids.invoice, status: "paid", subject_id: ids.subject, subscription_id: ids.subscription },
    },
  },
  "endpoint.failing": {
    description: "Operational: another endpoint of the company has failed WEBHOOK_FAILING_AFTER_ATTEMPTS attempts " +
      "in a row, or every attempt for WEBHOOK_FAILING_AFTER_SECONDS; sent once per failing streak, before the " +
      "endpoint is disabled. Only to endpoints that name this type (not `*`).",
    data: object({
      ...aboutEndpoint,
      failing_since: instant,
      consecutive_failures: { type: "integer", minimum: 1 },
      last_error: text,
    }),
    example: {
      endpoint_id: ids.endpoint,
      url: "https://hooks.example.com/payments",
      failing_since: "2026-11-21T07:00:00.123Z",
      consecutive_failures: 10,
      last_error: "HTTP 500",
    },
  },
  "endpoint.disabled": {
    description: "Operational: another endpoint of the company was disabled: by hand (`manual`), by a 410 answer " +
      "(`gone`) or after failing for WEBHOOK_DISABLE_AFTER_SECONDS (`failing`). Only to endpoints that name this " +
      "type (not `*`).",
    data: object({ ...aboutEndpoint, reason: { enum: ["manual", "gone", "failing"] }, disabled_at: instant }),
    example: {
      endpoint_id: ids.endpoint,
      url: "https://hooks.example.com/payments",
      reason: "failing",
      disabled_at: "2026-11-26T07:00:00.123Z",
    },
  },
  "delivery.exhausted": {
    description: "Operational: a delivery record to another endpoint of the company failed the last attempt of its " +
      "schedule and will not be sent again unless retried or recovered. Not sent for records of operational " +
      "events. Only to endpoints that name this type (not `*`).",
    data: object({
      delivery_id: uuid,
      ...aboutEndpoint,
      event_id: uuid,
      event_type: text,
      attempts: { type: "integer", minimum: 1 },
      last_error: text,
    }),
    example: {
      delivery_id: ids.failedDelivery,
      endpoint_id: ids.endpoint,
      url: "https://hooks.example.com/payments",
      event_id: ids.event,
      event_type: "identified",
      attempts: 10,
      last_error: "HTTP 500",
    },
  },
};

function entry(type: EventType): CatalogueEntry {
  const { description, data, example } = DATA[type];
  return {
    type,
    description,
    schema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      title: type,
      description: `${description} The body with the default endpoint settings; event_mapping renames \`type\`.`,
      type: "object",
      properties: {
        id: { ...uuid, description: "The delivery record's id: the same at every attempt, to de-duplicate on" },
        type: { const: type },
        data,
        secret: { type: "string", description: "Only with inject_secret_in_body" },
      },
      required: ["id", "type", "data"],
      additionalProperties: false,
    },
    example: { id: ids.delivery, type, data: example },
  };
}

/** Every event type, in the order of EVENT_TYPES. */
export const CATALOGUE: readonly CatalogueEntry[] = EVENT_TYPES.map(entry);

const BY_TYPE = new Map(CATALOGUE.map((e) => [e.type, e]));

export function catalogueEntry(type: EventType): CatalogueEntry {
  return BY_TYPE.get(type)!;
}
