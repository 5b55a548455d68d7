-- Integrator accounts. A row appears on the first request with a valid token; the profile is filled later.
create table companies (
  id uuid primary key,
  social_name text,
  document_type text,
  document_number text,
  inserted_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table people (
  id uuid primary key,
  company_id uuid not null references companies (id),
  status text not null default 'approved' check (status in ('approved', 'reproved', 'waiting_approval')),
  status_reason text not null default '',
  clearance_level integer not null default 1,
  required_clearance_level integer not null default 1,
  document_type text not null check (document_type in ('cpf', 'curp', 'cc', 'ce', 'passport')),
  document_number text not null,
  social_name text not null,
  fiscal_country text not null,
  rfc_pf text,
  email text,
  website text,
  phone_country_code text,
  phone_area_code text,
  phone_number text,
  birth_date date,
  net_monthly_average_income numeric(20, 2) check (net_monthly_average_income >= 0),
  address_street text,
  address_number text,
  address_complement text,
  address_neighborhood text,
  address_postal_code text,
  address_city text,
  address_state text,
  address_country text,
  inserted_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- registering the same document again updates the person: this is the upsert key
  unique (company_id, document_type, document_number)
);

-- every read is by company, and lists page by id
create index people_company_id_idx on people (company_id, id);

-- Metadata of a customer's documents; the bytes live behind the storage module (document_blobs).
create table documents (
  id uuid primary key,
  company_id uuid not null references companies (id),
  person_id uuid not null references people (id),
  labels text[] not null,
  file_type text not null,
  file_name text,
  file_url text,
  size integer,
  inserted_at timestamptz not null default now()
);

create index documents_person_idx on documents (person_id, id);

create table document_blobs (
  document_id uuid primary key references documents (id),
  bytes bytea not null
);
