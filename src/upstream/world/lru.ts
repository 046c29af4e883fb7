/** A tiny bounded cache so that paging through one query does not redo its ranking. */
export class Lru<V> {
  private readonly map = new Map<string, V>()
  private readonly max: number
  constructor(max: number) {
    this.max = max
  }
  get(key: string, make: () => V): V {
    const hit = this.map.get(key)
    if (hit !== undefined) {
      this.map.delete(key)
      this.map.set(key, hit)
      return hit
    }
    const v = make()
    this.map.set(key, v)
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value!)
    return v
  }
}
