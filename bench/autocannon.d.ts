// The part of autocannon 9's API the bench uses (the package ships no types).
declare module "autocannon" {
  interface Request {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string
  }
  interface Options {
    url: string
    connections?: number
    duration?: number
    method?: string
    requests?: ReadonlyArray<{ setupRequest?: (request: Request) => Request }>
  }
  interface Result {
    duration: number
    errors: number
    timeouts: number
    requests: { total: number; average: number }
    latency: { p50: number; p99: number; max: number }
    statusCodeStats: Record<string, { count: number }>
  }
  export default function autocannon(options: Options): Promise<Result>
}
