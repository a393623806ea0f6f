export default async function first() {
  return { state_delta: { first: "done" } };
}
