/**
 * ISO 3166-1 alpha-2 → alpha-3. Bank accounts store and show alpha-3 while existing clients send alpha-2,
 * and a BIC names its country in alpha-2. XK (Kosovo) is user-assigned but used by SWIFT.
 */
const PAIRS =
  "AD AND AE ARE AF AFG AG ATG AI AIA AL ALB AM ARM AO AGO AQ ATA AR ARG AS ASM AT AUT AU AUS AW ABW AX ALA AZ AZE " +
  "BA BIH BB BRB BD BGD BE BEL BF BFA BG BGR BH BHR BI BDI BJ BEN BL BLM BM BMU BN BRN BO BOL BQ BES BR BRA BS BHS " +
  "BT BTN BV BVT BW BWA BY BLR BZ BLZ CA CAN CC CCK CD COD CF CAF CG COG CH CHE CI CIV CK COK CL CHL CM CMR CN CHN " +
  "CO COL CR CRI CU CUB CV CPV CW CUW CX CXR CY CYP CZ CZE DE DEU DJ DJI DK DNK DM DMA DO DOM DZ DZA EC ECU EE EST " +
  "EG EGY EH ESH ER ERI ES ESP ET ETH FI FIN FJ FJI FK FLK FM FSM FO FRO FR FRA GA GAB GB GBR GD GRD GE GEO GF GUF " +
  "GG GGY GH GHA GI GIB GL GRL GM GMB GN GIN GP GLP GQ GNQ GR GRC GS SGS GT GTM GU GUM GW GNB GY GUY HK HKG HM HMD " +
  "HN HND HR HRV HT HTI HU HUN ID IDN IE IRL IL ISR IM IMN IN IND IO IOT IQ IRQ IR IRN IS ISL IT ITA JE JEY JM JAM " +
  "JO JOR JP JPN KE KEN KG KGZ KH KHM KI KIR KM COM KN KNA KP PRK KR KOR KW KWT KY CYM KZ KAZ LA LAO LB LBN LC LCA " +
  "LI LIE LK LKA LR LBR LS LSO LT LTU LU LUX LV LVA LY LBY MA MAR MC MCO MD MDA ME MNE MF MAF MG MDG MH MHL MK MKD " +
  "ML MLI MM MMR MN MNG MO MAC MP MNP MQ MTQ MR MRT MS MSR MT MLT MU MUS MV MDV MW MWI MX MEX MY MYS MZ MOZ NA NAM " +
  "NC NCL NE NER NF NFK NG NGA NI NIC NL NLD NO NOR NP NPL NR NRU NU NIU NZ NZL OM OMN PA PAN PE PER PF PYF PG PNG " +
  "PH PHL PK PAK PL POL PM SPM PN PCN PR PRI PS PSE PT PRT PW PLW PY PRY QA QAT RE REU RO ROU RS SRB RU RUS RW RWA " +
  "SA SAU SB SLB SC SYC SD SDN SE SWE SG SGP SH SHN SI SVN SJ SJM SK SVK SL SLE SM SMR SN SEN SO SOM SR SUR SS SSD " +
  "ST STP SV SLV SX SXM SY SYR SZ SWZ TC TCA TD TCD TF ATF TG TGO TH THA TJ TJK TK TKL TL TLS TM TKM TN TUN TO TON " +
  "TR TUR TT TTO TV TUV TW TWN TZ TZA UA UKR UG UGA UM UMI US USA UY URY UZ UZB VA VAT VC VCT VE VEN VG VGB VI VIR " +
  "VN VNM VU VUT WF WLF WS WSM XK XKX YE YEM YT MYT ZA ZAF ZM ZMB ZW ZWE";

const ALPHA3_OF: ReadonlyMap<string, string> = (() => {
  const words = PAIRS.split(" ");
  const map = new Map<string, string>();
  for (let i = 0; i < words.length; i += 2) map.set(words[i], words[i + 1]);
  return map;
})();
const ALPHA3: ReadonlySet<string> = new Set(ALPHA3_OF.values());
const ALPHA2_OF: ReadonlyMap<string, string> = new Map([...ALPHA3_OF].map(([alpha2, alpha3]) => [alpha3, alpha2]));

/** The alpha-3 code of an alpha-2 or alpha-3 country code (any case), or null when it names no country. */
export function countryAlpha3(code: string): string | null {
  const upper = code.trim().toUpperCase();
  if (upper.length === 2) return ALPHA3_OF.get(upper) ?? null;
  return ALPHA3.has(upper) ? upper : null;
}

/**
 * The refusal of a field that takes a few countries: the alpha-3 codes it stores, then their alpha-2 forms, which it
 * reads too (a client that sent `Brasil` learns that `BR` would do).
 *
 * @example
 * ```ts
 * oneOfCountries(["BRA", "MEX"]); // "must be one of: BRA, MEX (or BR, MX)"
 * ```
 */
export function oneOfCountries(alpha3: readonly string[]): string {
  return `must be one of: ${alpha3.join(", ")} (or ${alpha3.map((c) => ALPHA2_OF.get(c) ?? c).join(", ")})`;
}

/** What a code that names no country is told, where any country will do: both forms read, each with an example. */
export const COUNTRY_FORMS = "expected three letters or two, e.g. BRA or BR";

/**
 * Why `code` names no country, where any country will do, after the field's own start (docs/errors.md, "What a format
 * expects"): the forms read when it is not two or three letters, and that no country has it when it is (`XX`, which
 * has the form but names nothing). The code is echoed only once it is known to be letters.
 *
 * @example
 * ```ts
 * unknownCountry("Brasil"); // "expected three letters or two, e.g. BRA or BR"
 * unknownCountry("xx"); // "expected a known country, e.g. BRA or BR (no country has the code XX)"
 * ```
 */
export function unknownCountry(code: string): string {
  const upper = code.trim().toUpperCase();
  return /^[A-Z]{2,3}$/.test(upper)
    ? `expected a known country, e.g. BRA or BR (no country has the code ${upper})`
    : COUNTRY_FORMS;
}
