-- The transactions API (README, "Transactions"): the company's internal accounts, and what a transaction created
-- through the API carries beyond what the sandbox rails recorded.

-- Time-ordered ids made in SQL, like the service's own (UUIDv7: 48 bits of unix milliseconds, version and variant
-- bits set), so rows the database creates sort by creation among the others.
create function uuid_v7() returns uuid language sql volatile as $$
  select encode(
    set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
      placing substring(int8send((extract(epoch from clock_timestamp()) * 1000)::bigint) from 3) from 1 for 6),
      52, 1), 53, 1),
    'hex')::uuid
$$;

-- A company's own accounts: international ones it registers (USD, EUR), and one internal account per currency,
-- opened with the company, where pay-ins are collected and pay-outs funded from.
alter table bank_accounts add column internal boolean not null default false;
alter table bank_accounts drop constraint bank_accounts_country_check;
alter table bank_accounts add constraint bank_accounts_country_check
  check (country in ('BRA', 'MEX', 'COL', 'CHL', 'INT'));
create unique index bank_accounts_internal_idx on bank_accounts (company_id, currency) where internal;
create index bank_accounts_company_own_idx on bank_accounts (company_id, id) where subject_id is null;

create function open_internal_accounts() returns trigger language plpgsql as $$
begin
  insert into bank_accounts (id, company_id, country, currency, internal, nickname, account_type)
  select uuid_v7(), new.id, country, currency, true, currency || ' internal account', 'conta-corrente'
  from (values ('BRL', 'BRA'), ('MXN', 'MEX'), ('COP', 'COL'), ('CLP', 'CHL'), ('USD', 'INT'), ('EUR', 'INT'))
    as internal(currency, country)
  on conflict do nothing;
  return new;
end
$$;

-- every way a company row appears (first token, user:create) opens its accounts in the same transaction
create trigger companies_open_internal_accounts after insert on companies
  for each row execute function open_internal_accounts();

insert into bank_accounts (id, company_id, country, currency, internal, nickname, account_type)
select uuid_v7(), c.id, internal.country, internal.currency, true, internal.currency || ' internal account',
       'conta-corrente'
from companies c
cross join (values ('BRL', 'BRA'), ('MXN', 'MEX'), ('COP', 'COL'), ('CLP', 'CHL'), ('USD', 'INT'), ('EUR', 'INT'))
  as internal(currency, country)
on conflict do nothing;

-- A voided pending transaction is canceled; a refund of a received pay-in is a transaction of its own.
alter table transactions drop constraint transactions_kind_check;
alter table transactions add constraint transactions_kind_check
  check (kind in ('payin', 'payout', 'card_payment', 'pix_charge', 'refund'));
alter table transactions drop constraint transactions_status_check;
alter table transactions add constraint transactions_status_check check (
  status in ('pending', 'identified', 'approved', 'failed', 'refunded', 'expired', 'exchanged', 'wired',
             'waiting_correction', 'canceled')
);
alter table pix_charges drop constraint pix_charges_status_check;
alter table pix_charges add constraint pix_charges_status_check
  check (status in ('pending', 'paid', 'refunded', 'expired', 'canceled'));

alter table transactions
  add column exchange_currency text references usd_rates (currency),
  add column exchanged_value numeric(30, 2),
  add column from_bank_account_id uuid references bank_accounts (id),
  add column to_bank_account_id uuid references bank_accounts (id),
  add column dynamic_pix_expires_at timestamptz,
  add column refund_of uuid references transactions (id);

-- a received pay-in is refunded once
create unique index transactions_refund_of_idx on transactions (refund_of) where refund_of is not null;
-- GET /api/v1/transactions: newest first, filtered by subject and status
create index transactions_company_id_idx on transactions (company_id, id);
create index transactions_company_status_idx on transactions (company_id, status, id);
-- the balance of an own account: what credited and what debited it
create index transactions_to_account_idx on transactions (to_bank_account_id) where to_bank_account_id is not null;
create index transactions_from_account_idx on transactions (from_bank_account_id)
  where from_bank_account_id is not null;
