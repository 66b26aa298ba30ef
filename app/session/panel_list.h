// Every panel of the app: one registration each, in tab order. An entry's place is its PanelId
// (append new panels: session files name them and Alt shortcuts keep their keys).
//
//   TSCOPE_PANEL(Id, name, title, shortcut, needs, sub-tabs...)
//     Id        PanelId::Id, and the factory make<Id>Panel() that the panel's own .cpp defines
//               (app/gui/panels/registry.cpp declares and calls it: a panel without one does not link)
//     name      for --panel, session files and lessons
//     title     the tab's title
//     shortcut  the key pressed with Alt: '1'..'9', '0' or a letter of app/gui/platform.h's Key
//     needs     PanelNeed flags (panel_catalog.h): what the panel asks of the model and of a request
//     sub-tabs  the region names its sub-tabs record (what a lesson step's "tab" names)
//
// Read by app/session/panel_catalog.cpp (names, titles, sub-tabs: no GUI) and by the GUI's
// registry (factories). Included with TSCOPE_PANEL defined; no include guard on purpose.
TSCOPE_PANEL(Prompt, "prompt", "Prompt & tokens", '1', kNeedsNothing)
TSCOPE_PANEL(Attention, "attention", "Attention", '2', kNeedsNothing)
TSCOPE_PANEL(Inside, "inside", "Inside the block", '3', kNeedsComponents | kStepsQueryRow)
TSCOPE_PANEL(Residual, "residual", "Residual & logit lens", '4', kNeedsNothing)
TSCOPE_PANEL(Sampling, "sampling", "Next token", '5', kNeedsNothing)
TSCOPE_PANEL(Positional, "positional", "Positional encodings", '6', kNeedsNothing, "positional_tab_sinusoidal", "positional_tab_learned",
             "positional_tab_rope", "positional_tab_alibi")
TSCOPE_PANEL(Moe, "moe", "Experts", '7', kMoeModelsOnly)
TSCOPE_PANEL(Architecture, "architecture", "Architecture & cost", '8', kNeedsNothing)
TSCOPE_PANEL(Scaling, "scaling", "Scaling laws", '9', kNeedsNothing, "scaling_tab_published", "scaling_tab_runs", "scaling_tab_emergence",
             "scaling_tab_cost")
TSCOPE_PANEL(Efficient, "efficient", "Efficient attention", 'E', kNeedsLayerQkv | kNeedsVariant | kStepsQueryRow, "efficient_tab_live",
             "efficient_tab_flash", "efficient_tab_cost")
TSCOPE_PANEL(Training, "training", "Training", '0', kOwnRun, "training_tab_run", "training_tab_compare")
TSCOPE_PANEL(Translation, "translation", "Translation", 'T', kNeedsNothing)
TSCOPE_PANEL(Fill, "fill", "Fill in the blank", 'B', kNeedsNothing)
TSCOPE_PANEL(Compare, "compare", "Compare", 'C', kNeedsNothing)
TSCOPE_PANEL(Vision, "vision", "Vision", 'V', kNeedsNothing)
