/** Identifier cleaning for every platform; each module is pure. */
export * from "./common.ts"
export * from "./forum.ts"
export * from "./hosts.ts"
export * from "./microblog.ts"
export * from "./profnet.ts"
