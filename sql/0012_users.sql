-- People of an integrator who sign in (POST /api/v1/sign_in) to get a bearer token for their company.
-- Only a memory-hard hash of the password is kept (docs/production.md, "Users and passwords").
create table users (
  id uuid primary key,
  company_id uuid not null references companies (id),
  username text not null,
  name text not null,
  password_hash text not null,
  inserted_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- Usernames are one namespace for the whole service (sign-in names no company), compared without case.
create unique index users_username_idx on users (lower(username));
create index users_company_idx on users (company_id);
