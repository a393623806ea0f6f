// Counts the scores at or above the threshold.
export default async function gate(args) {
  const passed = args._state.scores.filter((s) => s >= args.threshold).length;
  return { state_delta: { passed } };
}
