-- The bank directory: one row per bank, seeded with the main banks of each country. Seeded rows
-- (company_id null) are shared reference data; a bank an integrator names that is not seeded is learned for
-- that company only, so one tenant's input never shows up in another's accounts (decisions §2).
create table banks (
  id uuid primary key,
  company_id uuid references companies (id),
  country text not null,
  code text,
  ispb text,
  swift text,
  name text not null,
  inserted_at timestamptz not null default now(),
  check (code is not null or swift is not null)
);

-- one bank per code (or SWIFT) among the shared rows, and per company among the learned ones;
-- the learned-row indexes are the ON CONFLICT targets of the race-safe upsert
create unique index banks_shared_code_idx on banks (country, code) where company_id is null and code is not null;
create unique index banks_shared_swift_idx on banks (swift) where company_id is null and swift is not null;
create unique index banks_learned_code_idx on banks (company_id, country, code)
  where company_id is not null and code is not null;
create unique index banks_learned_swift_idx on banks (company_id, swift)
  where company_id is not null and swift is not null;

-- Accounts of a subject (subject_id set) or of the company itself (international, subject_id null).
create table bank_accounts (
  id uuid primary key,
  company_id uuid not null references companies (id),
  subject_id uuid references people (id),
  country text not null check (country in ('BRA', 'MEX', 'COL', 'INT')),
  currency text not null,
  account_type text,
  account_number text,
  branch_number text,
  branch_country text,
  routing_number text,
  iban text,
  aba text,
  nickname text,
  owner_name text,
  owner_document_number text,
  owner_document_type text,
  pix_type text,
  pix_key text,
  bank_id uuid references banks (id),
  intermediary_bank_account_id uuid references bank_accounts (id),
  inserted_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((pix_type is null) = (pix_key is null))
);

create index bank_accounts_subject_idx on bank_accounts (company_id, subject_id, id);

-- Brazil: COMPE code and ISPB; Mexico: SPEI codes (the CLABE prefix); Colombia: ACH codes.
insert into banks (id, country, code, ispb, name) values
  ('01a1fd25-8d1f-7070-b738-d0fe8af00abc', 'BRA', '001', '00000000', 'Banco do Brasil S.A.'),
  ('01a1fd25-8d20-74e7-a046-91783ea38412', 'BRA', '003', '04902979', 'Banco da Amazônia S.A.'),
  ('01a1fd25-8d20-74e7-a046-970eed37dc63', 'BRA', '004', '07237373', 'Banco do Nordeste do Brasil S.A.'),
  ('01a1fd25-8d20-74e7-a046-9b96b39c7f7b', 'BRA', '021', '28127603', 'Banestes S.A. Banco do Estado do Espírito Santo'),
  ('01a1fd25-8d20-74e7-a046-9e5ad092584c', 'BRA', '033', '90400888', 'Banco Santander (Brasil) S.A.'),
  ('01a1fd25-8d20-74e7-a046-a361d9f7ce15', 'BRA', '041', '92702067', 'Banco do Estado do Rio Grande do Sul S.A. (Banrisul)'),
  ('01a1fd25-8d20-74e7-a046-a752d4be8aae', 'BRA', '070', '00000208', 'BRB - Banco de Brasília S.A.'),
  ('01a1fd25-8d20-74e7-a046-ab790b84cb42', 'BRA', '077', '00416968', 'Banco Inter S.A.'),
  ('01a1fd25-8d20-74e7-a046-afd60ac6c0d9', 'BRA', '104', '00360305', 'Caixa Econômica Federal'),
  ('01a1fd25-8d20-74e7-a046-b3bd0f086389', 'BRA', '208', '30306294', 'Banco BTG Pactual S.A.'),
  ('01a1fd25-8d20-74e7-a046-b749bb99c21d', 'BRA', '212', '92894922', 'Banco Original S.A.'),
  ('01a1fd25-8d20-74e7-a046-bb8a5dc97b1c', 'BRA', '237', '60746948', 'Banco Bradesco S.A.'),
  ('01a1fd25-8d20-74e7-a046-bd9c2e5f7da3', 'BRA', '260', '18236120', 'Nu Pagamentos S.A.'),
  ('01a1fd25-8d20-74e7-a046-c035b6d678fc', 'BRA', '290', '08561701', 'PagSeguro Internet S.A.'),
  ('01a1fd25-8d20-74e7-a046-c6ab8894de3e', 'BRA', '323', '10573521', 'Mercado Pago Instituição de Pagamento Ltda.'),
  ('01a1fd25-8d20-74e7-a046-cb1f93ce8bb9', 'BRA', '336', '31872495', 'Banco C6 S.A.'),
  ('01a1fd25-8d20-74e7-a046-cc8dd0040cf2', 'BRA', '341', '60701190', 'Itaú Unibanco S.A.'),
  ('01a1fd25-8d20-74e7-a046-d02caa7f9404', 'BRA', '380', '22896431', 'PicPay Instituição de Pagamento S.A.'),
  ('01a1fd25-8d20-74e7-a046-d42335f7da3a', 'BRA', '422', '58160789', 'Banco Safra S.A.'),
  ('01a1fd25-8d20-74e7-a046-d9266ac4cbfe', 'BRA', '623', '59285411', 'Banco Pan S.A.'),
  ('01a1fd25-8d20-74e7-a046-dde713da682b', 'BRA', '655', '59588111', 'Banco Votorantim S.A.'),
  ('01a1fd25-8d20-74e7-a046-e03b5c172837', 'BRA', '745', '33479023', 'Banco Citibank S.A.'),
  ('01a1fd25-8d20-74e7-a046-e7042de452ef', 'BRA', '748', '01181521', 'Banco Cooperativo Sicredi S.A.'),
  ('01a1fd25-8d20-74e7-a046-e9634f1ed325', 'BRA', '756', '02038232', 'Banco Cooperativo Sicoob S.A.'),
  ('01a1fd25-8d20-74e7-a046-ef582c3909e5', 'MEX', '002', null, 'BANAMEX'),
  ('01a1fd25-8d20-74e7-a046-f217743e4edc', 'MEX', '006', null, 'BANCOMEXT'),
  ('01a1fd25-8d20-74e7-a046-f78a2860ea7a', 'MEX', '009', null, 'BANOBRAS'),
  ('01a1fd25-8d20-74e7-a046-fbc116ddfa41', 'MEX', '012', null, 'BBVA MEXICO'),
  ('01a1fd25-8d20-74e7-a046-fed673b6a1bc', 'MEX', '014', null, 'SANTANDER'),
  ('01a1fd25-8d20-74e7-a047-002a05e62549', 'MEX', '019', null, 'BANJERCITO'),
  ('01a1fd25-8d20-74e7-a047-0592784ca308', 'MEX', '021', null, 'HSBC'),
  ('01a1fd25-8d20-74e7-a047-09d8c0f3ef40', 'MEX', '030', null, 'BAJIO'),
  ('01a1fd25-8d20-74e7-a047-0cc9155d3183', 'MEX', '032', null, 'IXE'),
  ('01a1fd25-8d20-74e7-a047-1168d3e756c1', 'MEX', '036', null, 'INBURSA'),
  ('01a1fd25-8d20-74e7-a047-15bfec793b5f', 'MEX', '042', null, 'MIFEL'),
  ('01a1fd25-8d20-74e7-a047-1973c8f73a41', 'MEX', '044', null, 'SCOTIABANK'),
  ('01a1fd25-8d20-74e7-a047-1f7e323de109', 'MEX', '058', null, 'BANREGIO'),
  ('01a1fd25-8d20-74e7-a047-20398e78c710', 'MEX', '059', null, 'INVEX'),
  ('01a1fd25-8d20-74e7-a047-2440e3ace248', 'MEX', '060', null, 'BANSI'),
  ('01a1fd25-8d20-74e7-a047-28e521a2f755', 'MEX', '062', null, 'AFIRME'),
  ('01a1fd25-8d20-74e7-a047-2d47777b69c8', 'MEX', '072', null, 'BANORTE'),
  ('01a1fd25-8d20-74e7-a047-3222581f94ee', 'MEX', '106', null, 'BANK OF AMERICA'),
  ('01a1fd25-8d20-74e7-a047-374c5e2ec577', 'MEX', '112', null, 'BMONEX'),
  ('01a1fd25-8d20-74e7-a047-3b4b83974bf7', 'MEX', '127', null, 'AZTECA'),
  ('01a1fd25-8d20-74e7-a047-3f1addc55bee', 'MEX', '128', null, 'AUTOFIN'),
  ('01a1fd25-8d20-74e7-a047-41de830ede2c', 'MEX', '130', null, 'COMPARTAMOS'),
  ('01a1fd25-8d20-74e7-a047-467a751cb0f7', 'MEX', '132', null, 'MULTIVA BANCO'),
  ('01a1fd25-8d20-74e7-a047-4a5bc1a72900', 'MEX', '133', null, 'ACTINVER'),
  ('01a1fd25-8d20-74e7-a047-4d03c6767a90', 'MEX', '137', null, 'BANCOPPEL'),
  ('01a1fd25-8d20-74e7-a047-52c90a6f6cbb', 'MEX', '138', null, 'ABC CAPITAL'),
  ('01a1fd25-8d20-74e7-a047-55d8a08698cd', 'MEX', '140', null, 'CONSUBANCO'),
  ('01a1fd25-8d20-74e7-a047-5a0731c1cf68', 'MEX', '143', null, 'CIBANCO'),
  ('01a1fd25-8d20-74e7-a047-5db63804f99c', 'MEX', '145', null, 'BBASE'),
  ('01a1fd25-8d20-74e7-a047-61f3cc1256a6', 'MEX', '166', null, 'BANCO DEL BIENESTAR'),
  ('01a1fd25-8d20-74e7-a047-64d9c183ffd1', 'MEX', '167', null, 'HEY BANCO'),
  ('01a1fd25-8d20-74e7-a047-6a698580625e', 'MEX', '601', null, 'GBM'),
  ('01a1fd25-8d20-74e7-a047-6c5a7f1ff208', 'MEX', '606', null, 'ESTRUCTURADORES'),
  ('01a1fd25-8d20-74e7-a047-73c0c1f6a828', 'MEX', '616', null, 'FINAMEX'),
  ('01a1fd25-8d20-74e7-a047-76169c2f3202', 'MEX', '638', null, 'NU MEXICO'),
  ('01a1fd25-8d20-74e7-a047-78f41d07d736', 'MEX', '640', null, 'CB JPMORGAN'),
  ('01a1fd25-8d20-74e7-a047-7fc23c79e007', 'MEX', '646', null, 'STP'),
  ('01a1fd25-8d20-74e7-a047-818f1097da6b', 'MEX', '699', null, 'FONDEADORA'),
  ('01a1fd25-8d20-74e7-a047-85c885f03e3a', 'MEX', '722', null, 'MERCADO PAGO W'),
  ('01a1fd25-8d20-74e7-a047-8b56ee02b5fd', 'COL', '001', null, 'Banco de Bogotá'),
  ('01a1fd25-8d20-74e7-a047-8cd2a1dbaf06', 'COL', '002', null, 'Banco Popular'),
  ('01a1fd25-8d20-74e7-a047-910bb52ad4cc', 'COL', '006', null, 'Banco Itaú'),
  ('01a1fd25-8d20-74e7-a047-976350cb1f58', 'COL', '007', null, 'Bancolombia'),
  ('01a1fd25-8d20-74e7-a047-98bd8b88bdad', 'COL', '009', null, 'Citibank Colombia'),
  ('01a1fd25-8d20-74e7-a047-9f42583717e6', 'COL', '012', null, 'Banco GNB Sudameris'),
  ('01a1fd25-8d20-74e7-a047-a3d594585834', 'COL', '013', null, 'BBVA Colombia'),
  ('01a1fd25-8d20-74e7-a047-a734d394e81a', 'COL', '019', null, 'Scotiabank Colpatria'),
  ('01a1fd25-8d20-74e7-a047-a886c6d9dd37', 'COL', '023', null, 'Banco de Occidente'),
  ('01a1fd25-8d20-74e7-a047-af0c98b1fc25', 'COL', '032', null, 'Banco Caja Social'),
  ('01a1fd25-8d20-74e7-a047-b1f9f436ff4d', 'COL', '040', null, 'Banco Agrario de Colombia'),
  ('01a1fd25-8d20-74e7-a047-b65df6d157fe', 'COL', '051', null, 'Davivienda'),
  ('01a1fd25-8d20-74e7-a047-bb56470f5d32', 'COL', '052', null, 'Banco AV Villas'),
  ('01a1fd25-8d20-74e7-a047-bf8214f8d584', 'COL', '062', null, 'Banco Falabella'),
  ('01a1fd25-8d20-74e7-a047-c0a3d220a07a', 'COL', '507', null, 'Nequi'),
  ('01a1fd25-8d20-74e7-a047-c7fa9257d66a', 'COL', '551', null, 'Daviplata');
