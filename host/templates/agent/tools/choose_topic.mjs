// Gets {...args, _edge_inputs, _state}; returns the state fields to write.
export default async function chooseTopic(args) {
  return { state_delta: { topic: args.topic } };
}
