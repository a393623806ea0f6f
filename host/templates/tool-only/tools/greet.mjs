// Reads `name` (declared in `reads`) from _state and writes the greeting.
export default async function greet(args) {
  return { state_delta: { greeting: `hello, ${args._state.name}` } };
}
