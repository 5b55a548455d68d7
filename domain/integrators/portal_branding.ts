/**
 * A portal link's branding (docs/webhooks.md, "Portal links"): the platform's name, accent colour, support address and
 * logo, which the link's console page wears in place of the service's own. Its bounds and the logo's check live here,
 * apart from portal_links.ts (the link's lifecycle), because they are what a platform's file must pass before it is
 * stored and served from this service's origin.
 *
 * ```ts
 * const logo = await checkLogo({ file_type: "image/png", file_data: base64 }); // 422 naming branding.logo otherwise
 * ```
 */
import { fileTypeFromBuffer } from "file-type";
import { validationFailed } from "../basics/errors.ts";

/** The logo's bound in bytes (docs/limits.md): 64 KiB, about 87 KiB in base64, within a JSON body's 256 KiB. */
export const LOGO_MAX_BYTES = 65_536;
/** The only logo types: images a browser shows and cannot run (no SVG, which may carry script). */
export const LOGO_TYPES = ["image/png", "image/webp"] as const;
export type LogoType = typeof LOGO_TYPES[number];
/** The name's bound: it is the page's heading and title, one short line. */
export const BRAND_NAME_MAX = 60;
/** `#rrggbb`, the one form a stylesheet takes as it is. */
export const ACCENT_COLOR_RE = /^#[0-9a-fA-F]{6}$/;

export type Branding = {
  name: string | null;
  accentColor: string | null;
  supportUrl: string | null;
  /** The type the stored logo's bytes are, or null without a logo. */
  logoType: LogoType | null;
};

export type Logo = { type: LogoType; bytes: Uint8Array };

const logoError = (message: string) => validationFailed({ branding: { logo: { file_data: [message] } } });

function decodeBase64(data: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data) || data.length % 4 !== 0) return null;
  try {
    return Uint8Array.from(atob(data), (ch) => ch.charCodeAt(0));
  } catch {
    return null;
  }
}

/**
 * The logo a link's body gives, checked: base64 of at most `LOGO_MAX_BYTES` bytes that are a PNG or a WebP by their
 * magic numbers (file-type, as documents are checked), and the type the body claims. A 422 at
 * `branding.logo.file_data` otherwise, saying which.
 */
export async function checkLogo(input: { file_type: string; file_data: string }): Promise<Logo> {
  const bytes = decodeBase64(input.file_data);
  if (!bytes || bytes.length === 0) throw logoError("must be the image's bytes in base64");
  if (bytes.length > LOGO_MAX_BYTES) {
    throw logoError(`must be at most ${LOGO_MAX_BYTES} bytes (64 KiB); this one is ${bytes.length}`);
  }
  const detected = (await fileTypeFromBuffer(bytes))?.mime;
  const type = LOGO_TYPES.find((t) => t === detected);
  if (!type) throw logoError(`must be a PNG or a WebP image; these bytes are ${detected ?? "neither"}`);
  if (type !== input.file_type) throw logoError(`is ${type}, not the ${input.file_type} file_type says`);
  return { type, bytes };
}

/**
 * The text colour that reads on `accent` (`#rrggbb`): black or white, whichever contrasts more by WCAG's relative
 * luminance. Either is at least 4.5:1 on any colour, so a platform's accent never makes a button unreadable.
 */
export function textOnAccent(accent: string): "#000000" | "#ffffff" {
  const channel = (i: number) => {
    const c = parseInt(accent.slice(1 + 2 * i, 3 + 2 * i), 16) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const l = 0.2126 * channel(0) + 0.7152 * channel(1) + 0.0722 * channel(2);
  return (l + 0.05) / 0.05 >= 1.05 / (l + 0.05) ? "#000000" : "#ffffff";
}
