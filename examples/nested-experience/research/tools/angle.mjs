// One research angle on the topic: appends a note.
export default async function angle(args) {
  return { state_delta: { notes: [`${args._state.topic}: ${args.angle}`] } };
}
