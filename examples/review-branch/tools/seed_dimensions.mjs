// The dimensions every review covers; one review agent runs per dimension.
export default function seedDimensions() {
  return { state_delta: { dimensions: ["security", "correctness", "performance"] } };
}
