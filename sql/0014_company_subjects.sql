-- Company customers (README, "Company customers") are subjects like people: one table, so documents, bank accounts,
-- transactions, status and clearance take a company's id exactly like a person's. The document types of the two
-- kinds do not overlap, so the upsert key stays (company_id, document_type, document_number).
alter table people add column kind text not null default 'person' check (kind in ('person', 'company'));
alter table people add column trade_name text;
alter table people drop constraint people_document_type_check;
alter table people add constraint people_document_type_check check (
  (kind = 'person' and document_type in ('cpf', 'curp', 'cc', 'ce', 'passport'))
  or (kind = 'company' and document_type in ('cnpj', 'rfc', 'nit', 'rut', 'tax_id'))
);
-- the lists page by id within one kind
create index people_company_kind_id_idx on people (company_id, kind, id);
