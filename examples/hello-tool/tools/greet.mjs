// The smallest tool: its default export gets {...args, _edge_inputs, _state} and returns the
// state fields to write.
export default async function greet(args) {
  return { state_delta: { greeting: `hello, ${args.name}` } };
}
