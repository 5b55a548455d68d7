-- Payment rails: what the rails (or the sandbox standing in for them) record about money moving for a subject.
-- Money is NUMERIC with two places everywhere; totals get room for sums of the largest values.

-- USD value of one unit of each currency, used for the yearly clearance total (docs/clearance.md).
create table usd_rates (
  currency text primary key,
  usd_per_unit numeric(20, 10) not null check (usd_per_unit > 0),
  updated_at timestamptz not null default now()
);

insert into usd_rates (currency, usd_per_unit) values
  ('USD', 1),
  ('EUR', 1.08),
  ('BRL', 0.18),
  ('MXN', 0.055),
  ('COP', 0.00025),
  ('CLP', 0.00105);

-- Conversions; open ones of one subject and currency collect that day's transactions.
create table exchanges (
  id uuid primary key,
  company_id uuid not null references companies (id),
  subject_id uuid not null references people (id),
  currency text not null,
  value numeric(30, 2) not null default 0,
  status text not null default 'open' check (status in ('open', 'closed')),
  inserted_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create index exchanges_open_idx on exchanges (company_id, subject_id, currency) where status = 'open';

-- Outgoing transfers. to_bank_account is the destination as it was sent (and as corrected), so a later
-- change of the registered account does not rewrite history.
create table wires (
  id uuid primary key,
  company_id uuid not null references companies (id),
  subject_id uuid not null references people (id),
  bank_account_id uuid not null,
  currency text not null,
  value numeric(30, 2) not null default 0,
  status text not null check (status in ('sent', 'waiting_correction', 'waiting_confirmation')),
  error_code text,
  error_description text,
  unretryable boolean not null default false,
  to_bank_account jsonb not null,
  inserted_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create index wires_company_idx on wires (company_id, id);
create index wires_open_idx on wires (company_id, subject_id, bank_account_id, currency) where status = 'sent';

create table transactions (
  id uuid primary key,
  company_id uuid not null references companies (id),
  subject_id uuid not null references people (id),
  kind text not null check (kind in ('payin', 'payout', 'card_payment', 'pix_charge')),
  status text not null check (
    status in ('pending', 'identified', 'approved', 'failed', 'refunded', 'expired', 'exchanged', 'wired',
               'waiting_correction')
  ),
  currency text not null references usd_rates (currency),
  value numeric(20, 2) not null check (value > 0),
  usd_value numeric(30, 2) not null,
  cleared boolean not null,
  -- what the transaction still needs once it is cleared: an exchange (payin) or a wire to this account (payout)
  wants_exchange boolean not null default false,
  bank_account_id uuid,
  exchange_id uuid references exchanges (id),
  wire_id uuid references wires (id),
  inserted_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create index transactions_subject_idx on transactions (company_id, subject_id, inserted_at);
create index transactions_wire_idx on transactions (wire_id) where wire_id is not null;
create index transactions_exchange_idx on transactions (exchange_id) where exchange_id is not null;
create index transactions_held_idx on transactions (company_id, subject_id) where not cleared;

-- A dynamic PIX QR code; its transaction has the same id and stays pending until paid, refunded or expired.
create table pix_charges (
  id uuid primary key references transactions (id),
  company_id uuid not null references companies (id),
  subject_id uuid not null references people (id),
  value numeric(20, 2) not null,
  status text not null check (status in ('pending', 'paid', 'refunded', 'expired')),
  refuse_third_party boolean not null default false,
  payer_document_number text,
  qr_code text not null,
  inserted_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- The integrator's dedicated receiving accounts, one per currency, opened on first use.
create table dedicated_accounts (
  id uuid primary key,
  company_id uuid not null references companies (id),
  currency text not null,
  unique (company_id, currency)
);

-- Money that arrived from a payer who is not (yet) a registered subject.
create table bank_transactions (
  id uuid primary key,
  company_id uuid not null references companies (id),
  value numeric(20, 2) not null check (value > 0),
  currency text not null references usd_rates (currency),
  movement_date date not null,
  bank_account_id uuid not null references dedicated_accounts (id),
  paid_at timestamptz not null,
  spei_concepto_de_pago text,
  payer_document_type text not null,
  payer_document_number text not null,
  payer_name text not null,
  payer_bank_account jsonb not null,
  status text not null check (status in ('pending', 'identified')),
  transaction_id uuid references transactions (id),
  inserted_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- Person registration looks here on every POST: keep it one index probe that is usually empty.
create index bank_transactions_pending_idx on bank_transactions (company_id, payer_document_type, payer_document_number)
  where status = 'pending';

create table subscriptions (
  id uuid primary key,
  company_id uuid not null references companies (id),
  subject_id uuid not null references people (id),
  status text not null check (status in ('pending', 'active', 'canceled', 'completed')),
  cycles integer not null check (cycles > 0),
  paid_cycles integer not null default 0,
  qr_code text not null,
  canceled_by_payer boolean not null default false,
  canceled_reason text not null default '',
  inserted_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create index subscriptions_company_idx on subscriptions (company_id, id);

create table invoices (
  id uuid primary key,
  company_id uuid not null references companies (id),
  subscription_id uuid not null references subscriptions (id),
  subject_id uuid not null references people (id),
  cycle integer not null,
  status text not null check (status in ('paid')),
  inserted_at timestamptz not null default now(),
  unique (subscription_id, cycle)
);

-- Back-office decisions on a person; the latest reproval's reason is the person's status_reason.
create table person_status_log (
  id uuid primary key,
  company_id uuid not null references companies (id),
  person_id uuid not null references people (id),
  status text not null,
  items text[] not null default '{}',
  reason text not null default '',
  inserted_at timestamptz not null default now()
);

create index person_status_log_person_idx on person_status_log (person_id, id);
