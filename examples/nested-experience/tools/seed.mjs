// Sets the topic and the first note; the nested `research` experience appends more.
export default async function seed(args) {
  return { state_delta: { topic: args.topic, notes: [`${args.topic}: what it is`] } };
}
