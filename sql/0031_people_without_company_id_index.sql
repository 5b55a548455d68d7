-- people (company_id, id) is covered by two other indexes: the primary key finds a subject by id (every lookup also
-- names the company), and (company_id, kind, id) lists a company's subjects of one kind and serves any question by
-- company alone. One index fewer to write on every registration (docs/performance.md, "What changed").
drop index people_company_id_idx;
