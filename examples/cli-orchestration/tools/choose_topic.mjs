// The topic to summarize: the run's `--args '{"topic": "..."}'` when given, else a default.
const DEFAULT_TOPIC = "Write-ahead logging in SQLite";

export default async function chooseTopic(args) {
  const topic = typeof args.topic === "string" && args.topic.trim() !== "" ? args.topic : DEFAULT_TOPIC;
  return { state_delta: { topic } };
}
