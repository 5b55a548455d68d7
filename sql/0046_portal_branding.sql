set local lock_timeout = '5s';

-- A portal link's branding (docs/webhooks.md, "Portal links"): the platform's name, accent colour, support address and
-- logo, which the link's console page wears instead of the service's own. The logo is stored here, its bytes and the
-- type they were found to be (image/png or image/webp, at most 64 KiB, checked by the service before the insert), and
-- served from the service's own origin, so the page loads nothing from elsewhere and its policy stays as it is.
--
-- Nullable columns without defaults: adding them changes no row and takes the lock for an instant. The previous
-- release names its columns in every read and insert of portal_links, so it neither sees these nor needs to write
-- them; its links have no branding, and the page of such a link looks as it did.
alter table portal_links
  add column brand_name text,
  add column brand_accent_color text,
  add column brand_support_url text,
  add column brand_logo bytea,
  add column brand_logo_type text;
