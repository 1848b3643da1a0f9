// The test app's config: nothing special, as a user's app would have it. The build goes
// to .next/ here (ignored by git).
export default {};
