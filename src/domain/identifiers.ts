/** Identifier cleaning for every platform; each module is pure. */
export * from "./identifiers/common.ts"
export * from "./identifiers/forum.ts"
export * from "./identifiers/hosts.ts"
export * from "./identifiers/microblog.ts"
export * from "./identifiers/profnet.ts"
