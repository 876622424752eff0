// The commands of the hourglass CLI, one file each under commands/. Each registers its
// subcommand, options, help and examples on `app` and returns what runs when it was parsed.
#pragma once

#include "app.h"

namespace hourglass::cli {

Command AddHitCommand(CLI::App& app, const Globals& g);
Command AddCountCommand(CLI::App& app, const Globals& g);
Command AddCheckCommand(CLI::App& app, const Globals& g);
Command AddInspectCommand(CLI::App& app, const Globals& g);
Command AddResetCommand(CLI::App& app, const Globals& g);
Command AddReplayCommand(CLI::App& app, const Globals& g);
Command AddPolicyCommand(CLI::App& app, const Globals& g);
Command AddServeCommand(CLI::App& app, const Globals& g);

}  // namespace hourglass::cli
