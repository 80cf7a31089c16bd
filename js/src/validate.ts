// A tiny runtime-validation kit for the wire protocol (no dependency).
// A Check returns null when the value is fine, else a message naming the path.

export type Check = (value: unknown, path: string) => string | null;

const OPTIONAL = Symbol("optional");
type OptionalCheck = Check & { [OPTIONAL]: true };

export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

export const str: Check = (v, p) => (typeof v === "string" ? null : `${p}: expected a string`);

export const nonEmptyStr: Check = (v, p) =>
  typeof v === "string" && v.length > 0 ? null : `${p}: expected a non-empty string`;

export const bool: Check = (v, p) => (typeof v === "boolean" ? null : `${p}: expected a boolean`);

/** A non-negative integer. */
export const count: Check = (v, p) =>
  typeof v === "number" && Number.isInteger(v) && v >= 0 ? null : `${p}: expected an integer >= 0`;

/** A duration in milliseconds: a finite number >= 0 (an integer or not). */
export const milliseconds: Check = (v, p) =>
  typeof v === "number" && Number.isFinite(v) && v >= 0 ? null : `${p}: expected a number >= 0`;

export const literal =
  (...values: readonly string[]): Check =>
  (v, p) =>
    typeof v === "string" && values.includes(v) ? null : `${p}: expected one of ${values.join(", ")}`;

export const nullable =
  (check: Check): Check =>
  (v, p) =>
    v === null ? null : check(v, p);

/** A key that may be absent (or null); when present it must pass `check`. */
export const optional = (check: Check): OptionalCheck => {
  const c = ((v: unknown, p: string) => (v === null || v === undefined ? null : check(v, p))) as OptionalCheck;
  c[OPTIONAL] = true;
  return c;
};

export const arrayOf =
  (check: Check): Check =>
  (v, p) => {
    if (!Array.isArray(v)) return `${p}: expected an array`;
    for (let i = 0; i < v.length; i++) {
      const err = check(v[i], `${p}[${i}]`);
      if (err) return err;
    }
    return null;
  };

/** Any JSON value (what JSON.parse can return). */
export const json: Check = (v, p) => {
  if (v === null || typeof v === "string" || typeof v === "boolean") return null;
  if (typeof v === "number") return Number.isFinite(v) ? null : `${p}: not a JSON number`;
  if (Array.isArray(v)) return arrayOf(json)(v, p);
  if (isPlainObject(v)) {
    for (const [k, x] of Object.entries(v)) {
      const err = json(x, `${p}.${k}`);
      if (err) return err;
    }
    return null;
  }
  return `${p}: not a JSON value`;
};

export const jsonObject: Check = (v, p) => (isPlainObject(v) ? json(v, p) : `${p}: expected an object`);

export const recordOf =
  (check: Check): Check =>
  (v, p) => {
    if (!isPlainObject(v)) return `${p}: expected an object`;
    for (const [k, x] of Object.entries(v)) {
      const err = check(x, `${p}.${k}`);
      if (err) return err;
    }
    return null;
  };

/** An object with these keys; unknown extra keys are ignored (see docs/wire-protocol.md). */
export const obj =
  (shape: Record<string, Check>): Check =>
  (v, p) => {
    if (!isPlainObject(v)) return `${p}: expected an object`;
    for (const [key, check] of Object.entries(shape)) {
      if (!(key in v) && !(OPTIONAL in check)) return `${p}.${key}: missing`;
      const err = check(v[key], `${p}.${key}`);
      if (err) return err;
    }
    return null;
  };

/** A check for a key every message has: not made with `optional`. */
type RequiredCheck = Check & { [OPTIONAL]?: never };

/**
 * Checks for exactly the keys of `T`: an `optional` check where `T`'s key is optional, any
 * other check where it is required. Missing, unknown or wrongly optional keys do not compile,
 * so a validator written as `shape<SomeType>({...})` follows its type.
 */
export type Shape<T> = { [K in keyof T]-?: {} extends Pick<T, K> ? OptionalCheck : RequiredCheck };

/** `obj` for the keys of a type (see `Shape`). */
export const shape = <T>(checks: Shape<T>): Check => obj(checks as Record<string, Check>);

/** Discriminated union on `key`. */
export const union =
  (key: string, variants: Record<string, Check>): Check =>
  (v, p) => {
    if (!isPlainObject(v)) return `${p}: expected an object`;
    const tag = v[key];
    if (typeof tag !== "string" || !Object.prototype.hasOwnProperty.call(variants, tag)) {
      return `${p}.${key}: unknown ${key} ${JSON.stringify(tag)}`;
    }
    return (variants[tag] as Check)(v, p);
  };
