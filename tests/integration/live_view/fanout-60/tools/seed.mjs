// Twelve items for the for_each node.
export default async function seed() {
  return { state_delta: { items: Array.from({ length: 12 }, (_, i) => i) } };
}
