// Sums one column of the dataset's rows. CSV values arrive as strings (as in OpenExpertise),
// so each is converted with Number(); a value that is not a number is an error, not a NaN.
export default async function sum(args) {
  const rows = args._state.rows ?? [];
  let total = 0;
  rows.forEach((row, i) => {
    const value = Number(row[args.column]);
    if (!Number.isFinite(value)) {
      throw new Error(`row ${i + 1}: ${args.column} is ${JSON.stringify(row[args.column])}, not a number`);
    }
    total += value;
  });
  return { state_delta: { total } };
}
