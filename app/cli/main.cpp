// tscope-cli: placeholder entry point, replaced by the real command set.
int main() { return 0; }
