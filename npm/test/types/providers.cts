// postwire/providers' types as a CommonJS consumer sees them.
import providers = require("postwire/providers");
import github = require("postwire/providers/github");

const d: providers.ProviderDelivery = github.verify(new TextEncoder().encode("{}"), { "x-hub-signature-256": ["sha256=00"] }, { secret: "s" });
const p: "github" = github.provider;
// @ts-expect-error the options need the secret
github.verify("{}", {}, {});
void [d, p, providers.PROVIDERS];
