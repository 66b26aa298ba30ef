// The tscope-cli commands. Each takes its arguments (after the command name), prints JSON on
// stdout and returns the exit code; errors are thrown (tscope::Error, UsageError).
#pragma once
#include <string>
#include <vector>

namespace tscope::cli {

using Argv = std::vector<std::string>;
int runInfo(const Argv& argv);
int runPublished(const Argv& argv);  // published.cpp
int runTokenize(const Argv& argv);
int runDetokenize(const Argv& argv);
int runForward(const Argv& argv);
int runGenerate(const Argv& argv);
int runInit(const Argv& argv);
int runTrain(const Argv& argv);           // train.cpp
int runCompare(const Argv& argv);         // compare.cpp
int runCompareForward(const Argv& argv);  // compare_forward.cpp
int runAttentionBench(const Argv& argv);  // attention_bench.cpp
int runLesson(const Argv& argv);          // lesson.cpp: FILE_OR_NAME first, then flags
int runSweep(const Argv& argv);           // sweep.cpp
int runFit(const Argv& argv);             // sweep.cpp
int runScoreDates(const Argv& argv);      // score_dates.cpp
int runFill(const Argv& argv);            // fill.cpp
int runFillEval(const Argv& argv);        // fill.cpp
int runFamilies(const Argv& argv);        // fill.cpp
int runClassify(const Argv& argv);        // classify.cpp

}  // namespace tscope::cli
