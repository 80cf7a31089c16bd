// Runtime validation of wire messages by the protocol's JSON Schema: the one written from the
// kernel's pydantic models (src/generated/wire-schema.json), from which the page's types are also
// generated, so that the types and the checks cannot drift apart. No dependency: this reads the
// part of JSON Schema that pydantic writes for these models (`$ref` into `$defs`, `anyOf`,
// `oneOf` with a `discriminator`, `type`, `const`, `enum`, `minLength`, `minimum`, `properties`,
// `required`, `items`, `additionalProperties`); other keywords (`title`, `default`, ...) say
// nothing about validity. Keys a model does not list are ignored (docs/wire-protocol.md), unless
// its schema says `additionalProperties: false`.

/** A JSON Schema, in the keywords read here. */
export type Schema = {
  $ref?: string;
  anyOf?: Schema[];
  discriminator?: { propertyName: string; mapping: Record<string, string> };
  type?: string;
  const?: unknown;
  enum?: unknown[];
  minLength?: number;
  minimum?: number;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  additionalProperties?: Schema | boolean;
};

/** Null when the value is fine, else a message naming the path of the first problem
 * (`$.ops[0].text: expected a string`). */
export type Check = (value: unknown, path?: string) => string | null;

export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Each JSON type: its test and its name in a message. A JSON number is finite (no NaN). */
const TYPES: Record<string, [(v: unknown) => boolean, string]> = {
  string: [(v) => typeof v === "string", "a string"],
  boolean: [(v) => typeof v === "boolean", "a boolean"],
  null: [(v) => v === null, "null"],
  integer: [(v) => Number.isInteger(v), "an integer"],
  number: [(v) => typeof v === "number" && Number.isFinite(v), "a number"],
  array: [Array.isArray, "an array"],
  object: [isPlainObject, "an object"],
};

const has = (o: object, key: string): boolean => Object.prototype.hasOwnProperty.call(o, key);

/** A check of values against `schema`, its `$ref`s resolved in `defs` (`#/$defs/Name`). */
export function schemaCheck(defs: Record<string, Schema>, schema: Schema): Check {
  const resolve = (ref: string): Schema => defs[ref.slice(ref.lastIndexOf("/") + 1)] as Schema;

  function check(s: Schema, v: unknown, p: string): string | null {
    if (s.$ref) return check(resolve(s.$ref), v, p);
    if (s.discriminator) {
      const { propertyName: key, mapping } = s.discriminator;
      if (!isPlainObject(v)) return `${p}: expected an object`;
      const tag = v[key];
      if (typeof tag !== "string" || !has(mapping, tag)) return `${p}.${key}: unknown ${key} ${JSON.stringify(tag)}`;
      return check(resolve(mapping[tag] as string), v, p);
    }
    if (s.anyOf) {
      // The first branch's problem, unless another branch got further into the value.
      const errors = s.anyOf.map((b) => check(b, v, p));
      if (errors.includes(null)) return null;
      return errors.find((e) => !e!.startsWith(`${p}:`)) ?? (errors[0] as string);
    }
    const type = s.type ? TYPES[s.type] : undefined;
    if (type && !type[0](v)) return `${p}: expected ${type[1]}`;
    if (has(s, "const") && v !== s.const) return `${p}: expected ${JSON.stringify(s.const)}`;
    if (s.enum && !s.enum.includes(v)) return `${p}: expected one of ${s.enum.join(", ")}`;
    if (s.minLength !== undefined && [...(v as string)].length < s.minLength) {
      return `${p}: expected at least ${s.minLength} character(s)`;
    }
    if (s.minimum !== undefined && (v as number) < s.minimum) return `${p}: expected a number >= ${s.minimum}`;
    if (s.items) {
      for (const [i, x] of (v as unknown[]).entries()) {
        const err = check(s.items, x, `${p}[${i}]`);
        if (err) return err;
      }
    }
    if (s.type === "object") return checkObject(s, v as Record<string, unknown>, p);
    return null;
  }

  /** A listed key whose value is `undefined` counts as absent (JSON has no `undefined`). */
  function checkObject(s: Schema, v: Record<string, unknown>, p: string): string | null {
    const properties = s.properties ?? {};
    for (const key of s.required ?? []) if (v[key] === undefined) return `${p}.${key}: missing`;
    for (const [key, x] of Object.entries(v)) {
      const known = has(properties, key);
      if (known && x === undefined) continue;
      if (!known && s.additionalProperties === false) return `${p}.${key}: not a field here`;
      const sub = known ? properties[key] : s.additionalProperties;
      const err = typeof sub === "object" ? check(sub, x, `${p}.${key}`) : null;
      if (err) return err;
    }
    return null;
  }

  return (value, path = "$") => check(schema, value, path);
}
