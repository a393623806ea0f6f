// Summarizes the notes it was given as run args.
export default async function summarize(args) {
  const notes = args.notes ?? [];
  return { state_delta: { summary: `${args.subject}: ${notes.length} notes (${notes.map((n) => n.split(': ')[1]).join(', ')})` } };
}
