// Orders the findings of both searches by sub-question and URL, and lists each cited URL once.
// The two searches append to raw_findings in whatever order they finish; sorting here gives the
// cross-reference agent the same prompt on every run, so a recorded run replays.
export default async function extractCitations({ _state }) {
  const findings = (_state.raw_findings ?? []).filter((f) => typeof f?.url === "string" && f.url);
  const key = (f) => `${f.sub_question_id}\u0000${f.url}`;
  const sources = [...findings].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  const citations = [...new Set(sources.map((f) => f.url))].sort();
  return { state_delta: { sources, citations } };
}
