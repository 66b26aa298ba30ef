// The panel registry (app/session/panel_list.h) as the rest of the app reads it: every name,
// title, Alt shortcut and sub-tab names one panel only, a name turns back into its panel, the
// PanelId order is the registration order, and the needs the App reads are where they belong.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "app/session/panel_catalog.h"

using namespace tscope::session;

TEST(PanelCatalog, EveryPanelIsRegisteredOnceInPanelIdOrder) {
  const auto& panels = panelCatalog();
  ASSERT_EQ(panels.size(), static_cast<size_t>(PanelId::Count));
  std::set<std::string> names, titles, tabs;
  std::set<char> shortcuts;
  for (size_t i = 0; i < panels.size(); ++i) {
    const PanelInfo& panel = panels[i];
    EXPECT_EQ(static_cast<size_t>(panel.id), i) << panel.name;
    EXPECT_TRUE(names.insert(panel.name).second) << "two panels are named " << panel.name;
    EXPECT_TRUE(titles.insert(panel.title).second) << "two panels are titled " << panel.title;
    EXPECT_TRUE(shortcuts.insert(panel.shortcut).second) << "two panels share Alt " << panel.shortcut;
    EXPECT_EQ(panelFromName(panel.name), panel.id);
    EXPECT_STREQ(panelName(panel.id), panel.name);
    EXPECT_STREQ(panelTitle(panel.id), panel.title);
    for (const std::string& tab : panel.tabs) {
      EXPECT_TRUE(tabs.insert(tab).second) << "two sub-tabs are named " << tab;
      EXPECT_EQ(tab.rfind(std::string(panel.name) + "_tab_", 0), 0u) << tab << " is not named after its panel " << panel.name;
      EXPECT_EQ(panelOfTab(tab), panel.id) << tab;
    }
  }
  EXPECT_FALSE(panelFromName("Attention"));  // names, not titles
  EXPECT_FALSE(panelFromName(""));
  EXPECT_FALSE(panelOfTab("attention"));
  EXPECT_NE(panelTabNames().find("training_tab_compare"), std::string::npos);
  EXPECT_EQ(panelNames().substr(0, 17), "prompt attention ");
}

// Session files written before the registry name panels by these ids: their order is fixed.
TEST(PanelCatalog, SavedPanelNamesKeepTheirPlaces) {
  EXPECT_EQ(panelFromName("prompt"), PanelId::Prompt);
  EXPECT_EQ(panelFromName("efficient"), PanelId::Efficient);
  EXPECT_EQ(static_cast<int>(PanelId::Translation), 11);
  EXPECT_EQ(panelInfo(PanelId::Efficient).shortcut, 'E');
  EXPECT_EQ(panelInfo(PanelId::Training).shortcut, '0');
}

// What the App asks of the model for the panel on screen comes from these needs.
TEST(PanelCatalog, NeedsAreWhereThePanelsUseThem) {
  EXPECT_TRUE(panelInfo(PanelId::Inside).has(kNeedsComponents));
  EXPECT_TRUE(panelInfo(PanelId::Inside).has(kStepsQueryRow));
  EXPECT_TRUE(panelInfo(PanelId::Efficient).has(kNeedsLayerQkv));
  EXPECT_TRUE(panelInfo(PanelId::Efficient).has(kNeedsVariant));
  EXPECT_TRUE(panelInfo(PanelId::Moe).has(kMoeModelsOnly));
  EXPECT_TRUE(panelInfo(PanelId::Training).has(kOwnRun));
  int components = 0, variants = 0;
  for (const PanelInfo& panel : panelCatalog()) {
    components += panel.has(kNeedsComponents);
    variants += panel.has(kNeedsVariant);
  }
  EXPECT_EQ(components, 1);  // the components cost every forward: only the panel that shows them asks
  EXPECT_EQ(variants, 1);
}
