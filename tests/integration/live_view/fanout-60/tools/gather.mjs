// What fanned in: the number of items the for_each went over.
export default async function gather(args) {
  return { state_delta: { total: args._state.items.length } };
}
