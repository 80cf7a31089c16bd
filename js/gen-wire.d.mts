// Types of gen-wire.mjs, for the test that checks src/generated/wire.ts is current.
export declare const SCHEMA: string;
export declare const OUTPUT: string;
/** The TypeScript text for a schema document (the text of wire-schema.json). */
export declare function wireTypes(schemaText: string): Promise<string>;
/** Write OUTPUT from SCHEMA; returns whether it changed. */
export declare function writeWireTypes(): Promise<boolean>;
