from cogym_lab.cli.main import main

main()
