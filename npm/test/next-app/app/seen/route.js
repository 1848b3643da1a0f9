// What the webhook handler saw (test only).
export const dynamic = "force-dynamic";
export function GET() {
  return Response.json(globalThis.__seen ?? []);
}
