import type { AnyOperation } from "./Operation.ts"
import { getCompany } from "./profnet/getCompany.ts"
import { getPosts } from "./profnet/getPosts.ts"
import { getProfile } from "./profnet/getProfile.ts"
import { resolveUrl } from "./profnet/resolveUrl.ts"
import { searchPeople } from "./profnet/searchPeople.ts"
import type { OperationServices } from "./support.ts"

/** Every data operation of the service: REST routes, MCP tools and OpenAPI derive from this list. */
export const operations: ReadonlyArray<AnyOperation<OperationServices>> = [
  resolveUrl,
  getProfile,
  searchPeople,
  getCompany,
  getPosts
]
