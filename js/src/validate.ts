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
  /** Pydantic writes a tagged union as `oneOf` with a `discriminator`, which is what is read. */
  oneOf?: Schema[];
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

type PathCheck = (value: unknown, path: string) => string | null;

/** A check of values against `schema`, its `$ref`s (`#/$defs/Name`) resolved in `defs`. The
 * schema is turned into functions once; each named schema once, when first used. */
export function schemaCheck(defs: Record<string, Schema>, schema: Schema): Check {
  const named = new Map<string, PathCheck>();
  const ref = (ref: string): PathCheck => {
    const name = ref.slice(ref.lastIndexOf("/") + 1);
    let c = named.get(name);
    if (!c) {
      // Made on first use, so that a schema may refer to itself (JSON values, sub-agents).
      let made: PathCheck | undefined;
      c = (v, p) => (made ??= compile(defs[name] as Schema))(v, p);
      named.set(name, c);
    }
    return c;
  };

  function compile(s: Schema): PathCheck {
    if (s.$ref) return ref(s.$ref);
    if (s.discriminator) {
      const { propertyName: key, mapping } = s.discriminator;
      const variants = new Map(Object.entries(mapping).map(([tag, r]) => [tag, ref(r)]));
      return (v, p) => {
        if (!isPlainObject(v)) return `${p}: expected an object`;
        const variant = typeof v[key] === "string" ? variants.get(v[key] as string) : undefined;
        return variant ? variant(v, p) : `${p}.${key}: unknown ${key} ${JSON.stringify(v[key])}`;
      };
    }
    if (s.anyOf) {
      const branches = s.anyOf.map(compile);
      return (v, p) => {
        const errors: string[] = [];
        for (const branch of branches) {
          const err = branch(v, p);
          if (err === null) return null;
          errors.push(err);
        }
        // The first branch's problem, unless another branch got further into the value.
        return errors.find((e) => !e.startsWith(`${p}:`)) ?? (errors[0] as string);
      };
    }
    const steps: PathCheck[] = [];
    const type = s.type ? TYPES[s.type] : undefined;
    if (type) steps.push((v, p) => (type[0](v) ? null : `${p}: expected ${type[1]}`));
    if (has(s, "const")) steps.push((v, p) => (v === s.const ? null : `${p}: expected ${JSON.stringify(s.const)}`));
    const { enum: values, minLength, minimum, items } = s;
    if (values) steps.push((v, p) => (values.includes(v) ? null : `${p}: expected one of ${values.join(", ")}`));
    if (minLength !== undefined) {
      steps.push((v, p) => ([...(v as string)].length >= minLength ? null : `${p}: expected at least ${minLength} character(s)`));
    }
    if (minimum !== undefined) steps.push((v, p) => ((v as number) >= minimum ? null : `${p}: expected a number >= ${minimum}`));
    if (items) {
      const item = compile(items);
      steps.push((v, p) => {
        for (const [i, x] of (v as unknown[]).entries()) {
          const err = item(x, `${p}[${i}]`);
          if (err) return err;
        }
        return null;
      });
    }
    if (s.type === "object") steps.push(compileObject(s));
    return (v, p) => {
      for (const step of steps) {
        const err = step(v, p);
        if (err) return err;
      }
      return null;
    };
  }

  /** A listed key whose value is `undefined` counts as absent (JSON has no `undefined`). */
  function compileObject(s: Schema): PathCheck {
    const properties = s.properties ?? {};
    const listed = Object.entries(properties).map(([key, sub]) => [key, compile(sub)] as const);
    const required = new Set(s.required ?? []);
    const extra = s.additionalProperties;
    const other = typeof extra === "object" ? compile(extra) : undefined;
    return (v, p) => {
      const o = v as Record<string, unknown>;
      for (const [key, check] of listed) {
        if (o[key] === undefined) {
          if (required.has(key)) return `${p}.${key}: missing`;
        } else {
          const err = check(o[key], `${p}.${key}`);
          if (err) return err;
        }
      }
      if (extra === undefined || extra === true) return null;
      for (const key of Object.keys(o)) {
        if (has(properties, key)) continue;
        const err = other ? other(o[key], `${p}.${key}`) : `${p}.${key}: not a field here`;
        if (err) return err;
      }
      return null;
    };
  }

  const check = compile(schema);
  return (value, path = "$") => check(value, path);
}
