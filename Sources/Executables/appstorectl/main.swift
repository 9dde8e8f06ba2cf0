import OperatorCommands

await AppStoreCtl.main()
