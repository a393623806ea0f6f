// Gets {...args, _edge_inputs, _state}; returns the state fields to write.
export default async function pickName(args) {
  return { state_delta: { name: args.name } };
}
