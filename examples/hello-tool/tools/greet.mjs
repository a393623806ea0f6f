// The smallest tool: its default export gets {...args, _edge_inputs, _state} and returns the
// state fields to write. The node sets no `name`, so `oe run --args '{"name":"you"}'` supplies
// it (a node's own args would win over the run's, D1); without it, World is greeted.
export default async function greet(args) {
  return { state_delta: { greeting: `hello, ${args.name ?? "World"}` } };
}
