// Turns the verdicts (declared in `reads`) into a short Markdown report.
export default async function writeReport(args) {
  const verdicts = [...args._state.verdicts].sort((a, b) => a.idea.localeCompare(b.idea));
  const lines = verdicts.map((v) => `- ${v.keep ? "keep" : "drop"} ${v.idea}: ${v.reason}`);
  return { state_delta: { report: `# Verdicts\n\n${lines.join("\n")}\n` } };
}
