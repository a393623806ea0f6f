// A stand-in for a grader: the longer the answer, the higher its score (0..1).
export default async function score(args) {
  const scores = args.answers.map((a) => Math.min(1, a.length / 25));
  return { state_delta: { scores } };
}
